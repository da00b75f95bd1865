// y = x W^T + b for inference with more rows than few_rows_linear takes (a batch of images or
// beams per decoding step), from weights packed once, in float32 or bf16, for an AVX-512 or an
// AVX2 kernel.
//
//   PackedWeights packed;                                  // one per set of weights; copies share it
//   for (t ...) logits = packed.linear(h, out->weight, out->bias);   // [32, 512] -> [32, 10000]
//
// PackedWeight stores W as panels of kPanelWidth output columns, k-major, so the AVX-512 kernel
// keeps a kBlockRows x kPanelWidth block of y in 24 registers, reads two vectors of W and
// broadcasts kBlockRows values of x per step of k; the AVX2 kernel, with half the registers of
// half the width, takes the block as 6 rows by 16 columns at a time. Both are one body over
// vector lanes (vector_lanes.h). On CPUs with AVX-512 BF16, bf16 panels hold pairs of k, and a
// third kernel multiplies x's pairs with them by VDPBF16PS, half the instructions per weight; on
// CPUs with AMX BF16, tiles of x's rows meet the same panels by TDPBF16PS, 16 x 16 x 32 products
// per instruction.
// BLAS libraries repack W at every call,
// which costs as much as the product when x has a few dozen rows; and Debian's OpenBLAS runs its AVX2 kernels
// on CPUs it does not know or when OPENBLAS_CORETYPE pins them. Sums run in another order than BLAS's, so
// results differ from torch::linear by rounding (relative ~1e-6), deterministically and independently of the
// thread count.
//
// Shapes: x [M, K], weight [N, K] (any strides), bias [N] or undefined -> [M, N].
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <tuple>

#include "kernels/few_rows_linear.h"

namespace saccade {

// How PackedWeight keeps W: float32, or bf16 (rounded to nearest once; half the bytes to stream,
// widened exactly as the kernel loads them, products summed in float32).
enum class WeightStorage { fp32, bf16 };

// Output columns of one panel: two AVX-512 vectors.
inline constexpr int64_t kPanelWidth = 32;
// Rows of x one kernel call multiplies: 2 x kBlockRows accumulators, two W vectors and a
// broadcast fill the 32 registers.
inline constexpr int64_t kBlockRows = 12;

// A float32 weight [N, K] and bias [N] packed for the kernel, W stored as `storage` says;
// immutable. bf16 weights meet x as `bf16_product` says (few_rows_linear.h): widened, or, on CPUs
// with AVX-512 BF16, by VDPBF16PS from x rounded to bf16, with the panels holding each column's
// values of k and k + 1 side by side (K padded to even), or, on CPUs with AMX BF16, by tiles over
// the same panels (K padded to a multiple of 32). Bf16Product::dot or amx where the CPU lacks it
// is a std::logic_error.
class PackedWeight {
 public:
  PackedWeight(
      const torch::Tensor& weight,
      const torch::Tensor& bias = {},
      WeightStorage storage = WeightStorage::fp32,
      Bf16Product bf16_product = best_bf16_product());

  // True when the CPU (and the OS) run AVX-512F, or AVX2 and FMA; otherwise linear() must not
  // be called.
  static bool supported();

  // x [M, K] float32 on the CPU -> x W^T + b [M, N] by the best kernel the CPU runs. No autograd.
  torch::Tensor linear(const torch::Tensor& x) const;
  // The same by a chosen kernel (tests run each one the CPU supports); `isa` must be supported,
  // and AVX-512 for bf16 dot products.
  torch::Tensor linear(KernelIsa isa, const torch::Tensor& x) const;

  int64_t out_features() const { return out_features_; }
  int64_t in_features() const { return in_features_; }
  WeightStorage storage() const;
  bool dot_products() const { return dot_products_; }  // bf16 panels of pairs, for VDPBF16PS or tiles
  bool tiles() const { return tiles_; }                // multiplied by AMX tiles

 private:
  // y = x W^T + b by AMX tiles: x [M, K] float32, rounded to bf16 as it is laid out in tiles.
  void multiply_tiles(const torch::Tensor& x, torch::Tensor& y) const;
  // y = x W^T + b from x's rows [M, K] (float, or uint16_t: bf16 bits) packed as X (float, or
  // uint32_t: pairs of bf16) and the panels' data (float, or uint16_t: bf16 bits).
  template <typename Weight, typename X, typename XSource>
  void multiply(KernelIsa isa, const XSource* x_data, const Weight* w_data, torch::Tensor& y) const;

  // [ceil(N / kPanelWidth), K, kPanelWidth], zero columns past N; float or bf16. Dot products:
  // [ceil(N / kPanelWidth), ceil(K / 2), kPanelWidth, 2] bf16, zero past K too.
  torch::Tensor panels_;
  torch::Tensor bias_;  // [N] contiguous, or undefined
  int64_t out_features_ = 0, in_features_ = 0;
  bool dot_products_ = false;
  bool tiles_ = false;
};

// The packed copies of the weights one set of products uses, made the first time a product needs
// one (keyed by the weight view: data pointer, sizes and strides, and the storage). Copies share
// the packs. Keep it only as long as the weights do not change: it does not notice in-place
// updates. Not thread-safe: linear() may add to the packs that every copy shares.
class PackedWeights {
 public:
  // y = x W^T + b by the fastest route for x: few_rows_linear up to kMaxRows rows; the packed
  // kernel for more rows of float32 on a CPU with AVX-512 or AVX2 when no gradient is needed;
  // torch::linear otherwise. Inside an InferencePrecision with bf16 weights (inference_precision.h)
  // both kernels read a bf16 copy of W, and on CPUs with AMX BF16 the packed kernel's tiles take
  // every row count.
  torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

  // How many weight views are packed or copied to bf16 (with the copies' packs).
  int64_t size() const;

 private:
  using Key = std::tuple<const void*, int64_t, int64_t, int64_t, int64_t, const void*, WeightStorage>;
  struct Packs {
    std::map<Key, PackedWeight> panels;      // for more than kMaxRows rows
    std::map<Key, torch::Tensor> bf16_rows;  // [N, K] bf16, for few_rows_linear
  };
  std::shared_ptr<Packs> packs_ = std::make_shared<Packs>();
};

}  // namespace saccade
