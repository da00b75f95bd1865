// y = x W^T + b for a handful of rows x, as decoding steps have them (one image's beams).
//
//   torch::Tensor logits = few_rows_linear(h, out->weight, out->bias);   // [5, 512] -> [5, 10000]
//
// With a few rows a product is bound by streaming W from memory, and a general GEMM spends more
// time packing W than multiplying (OpenBLAS: ~11 GB/s of W at 5 rows on a machine that streams
// 40 GB/s). This kernel reads each row of W once, multiplies it with every row of x held in
// cache, and splits W's rows over LibTorch's threads. W may be bf16 (half the bytes to stream,
// sums in float32; see Bf16Product). It runs when x has at most kMaxRows rows, x is
// float32 and W float32 or bf16 on the CPU, W has unit stride along K, no gradient is needed,
// and the CPU has AVX-512F or AVX2 and FMA; otherwise the result comes from torch::linear (of W
// converted to x's type). Sums run in another order than
// BLAS's, so results differ from torch::linear by rounding (relative ~1e-6), deterministically.
//
// Shapes: x [M, K], weight [N, K] (any row stride), bias [N] or undefined -> [M, N].
#pragma once

#include <torch/types.h>

#include <cstdint>

#include "kernels/kernel_isa.h"

namespace saccade {

// Rows of x one kernel pass multiplies (its accumulators fill the registers).
inline constexpr int64_t kFewRows = 6;
// Up to this many rows the kernel runs in groups of kFewRows, each group re-reading W from cache;
// beyond, a GEMM is faster (measured: 2.3x faster than OpenBLAS at 12 rows, slower at 32); see
// PackedWeights (packed_linear.h), which picks between them.
inline constexpr int64_t kMaxRows = 16;

// Whether x W^T + b must record autograd history (grad mode is on and an operand requires grad):
// the hand-written kernels here and in packed_linear.h run only when it need not.
bool linear_needs_gradient(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

// How bf16 weights meet float32 x. widen: each weight widened exactly to float32 as it loads
// (every CPU with the kernels). dot: x rounded to bf16 (to nearest even) and multiplied with the
// weights by AVX-512 BF16's VDPBF16PS, two products per float32 lane and instruction, half the
// instructions per weight; x's rounding (relative 2^-9 at most) is the price. amx: x rounded
// the same way, and the packed products (packed_linear.h) multiply 16 x 32 tiles of it by AMX's
// TDPBF16PS, 8192 products per instruction, for any number of rows; here, amx is dot.
enum class Bf16Product { widen, dot, amx };
// amx where has_amx_bf16(), dot on other CPUs with AVX-512 BF16, else widen.
Bf16Product best_bf16_product();
const char* to_string(Bf16Product product);  // as the benches print it

torch::Tensor few_rows_linear(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

// The same with a chosen kernel (tests run each one the CPU supports); `isa` must be supported,
// and Bf16Product::dot (or amx, which is dot here) only given where has_avx512_bf16() (else
// std::logic_error).
torch::Tensor few_rows_linear(
    KernelIsa isa,
    const torch::Tensor& x,
    const torch::Tensor& weight,
    const torch::Tensor& bias = {},
    Bf16Product bf16_product = best_bf16_product());

}  // namespace saccade
