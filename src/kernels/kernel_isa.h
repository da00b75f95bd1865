// Which hand-written CPU kernels run: the instruction set they are compiled for, chosen at run
// time, and the tensors they take.
#pragma once

#include <torch/types.h>

#include <vector>

namespace saccade {

// The instruction sets the hand-written kernels (few_rows_linear.h, packed_linear.h,
// attention_kernels.h) are compiled for; none = the plain LibTorch ops.
enum class KernelIsa { none, avx2, avx512 };

// The best this CPU runs: avx512 (AVX-512F and FMA), avx2 (AVX2 and FMA) or none.
KernelIsa best_kernel_isa();

// Whether this CPU has AVX-512 BF16 (VDPBF16PS: pairs of bf16 products summed into float32)
// besides AVX-512F and FMA: bf16 dot products (few_rows_linear.h) and oneDNN's bf16 convolutions
// (models/conv_batchnorm.h) run there at full speed.
bool has_avx512_bf16();

// Whether this CPU has AMX with bf16 tiles (TDPBF16PS) besides AVX-512 BF16, and the kernel lets
// this process use the tiles (Linux asks each process to request them, ARCH_REQ_XCOMP_PERM; the
// request is made once, here): the packed products' bf16 panels multiply there (packed_linear.h).
bool has_amx_bf16();

// Every kernel this CPU runs, best last: {avx2, avx512}, {avx2} or {} (the tests run each).
std::vector<KernelIsa> supported_kernel_isas();

// "AVX-512", "AVX2" or "none", as the benches print it.
const char* to_string(KernelIsa isa);

// Whether the hand-written CPU kernels (few_rows_linear.h, packed_linear.h, attention_kernels.h,
// time_shared.h) may take `t`: on the CPU with CPU autocast off, and float32 (or float64 for the
// kernels that also take it: `doubles_too`). Everything else, CUDA tensors and bf16 autocast
// among them, goes to the plain LibTorch ops, which give the same results within tolerance.
bool takes_cpu_kernels(const torch::Tensor& t, bool doubles_too = false);

}  // namespace saccade
