// PackedWeight: one kernel over vector lanes, compiled for AVX2 and AVX-512, over weights (float32
// or bf16) packed in k-major panels; PackedWeights: the per-product choice between it,
// few_rows_linear and torch::linear.
#include "kernels/packed_linear.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <stdexcept>
#include <utility>
#include <vector>

#include "kernels/decoding_precision.h"
#include "kernels/few_rows_linear.h"
#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// K per pass: a [kDepth, kPanelWidth] slice of a panel (32 KiB) stays in L1 while every block of
// rows of a chunk meets it.
constexpr int64_t kDepth = 128;
// Rows of x packed per pass ([kChunkRows, K] stays in L2 and L3 while the panels stream by).
constexpr int64_t kChunkRows = 16 * kBlockRows;

// y[r, 0:columns] (+)= sum_k x[k][r] w[k][0:columns] over `depth` values of k, for the rows r
// of x a kernel takes, from x packed [depth][kBlockRows] and a panel slice w [depth][kPanelWidth]
// (float, or uint16_t for bf16 weights widened as they load).
template <typename Weight>
struct PanelProduct {
  int64_t depth;
  const float* x;   // packed, x[k][r] at x[k * kBlockRows + r]
  const Weight* w;  // w[k][c] at w[k * kPanelWidth + c]
  float* y;         // rows y_stride apart
  int64_t y_stride;
  int64_t columns;    // of y to write: 1 .. kPanelWidth
  bool accumulate;    // add to what y holds (the earlier passes over K)
  const float* bias;  // [columns], added when not null (the last pass only)
};

// Rows r < R by two vectors of W columns (`columns` in 1 .. 2W): 2R accumulators, two W vectors
// and a broadcast fill the registers.
template <int W, int R, typename Weight>
SACCADE_INLINE void panel_block(const PanelProduct<Weight>& product) {
  const auto [depth, x, w, y, y_stride, columns, accumulate, bias] = product;
  using V = Lanes<float, W>;
  // Every loop over the accumulators is unrolled: one indexing acc would keep them in memory,
  // stored at every step.
  V acc[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = V{};
  for (int64_t k = 0; k < depth; ++k) {
    const V w0 = load_floats<W>(w + k * kPanelWidth), w1 = load_floats<W>(w + k * kPanelWidth + W);
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const V v = broadcast<W>(x[k * kBlockRows + r]);
      acc[r][0] += v * w0;
      acc[r][1] += v * w1;
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    float* row = y + r * y_stride;
    if (columns == 2 * W) {
      V a = acc[r][0], b = acc[r][1];
      if (accumulate) a += load<W>(row), b += load<W>(row + W);
      if (bias != nullptr) a += load<W>(bias), b += load<W>(bias + W);
      store(row, a);
      store(row + W, b);
    } else {  // the last panel's columns past N are not written
      float sums[2 * W];
      store(sums, acc[r][0]);
      store(sums + W, acc[r][1]);
      for (int64_t c = 0; c < columns; ++c) {
        if (accumulate) sums[c] += row[c];
        if (bias != nullptr) sums[c] += bias[c];
        row[c] = sums[c];
      }
    }
  }
}

// R (<= kBlockRows) rows of x times one panel: blocks of up to MaxRows rows by 2W columns.
template <int W, int MaxRows, int R, typename Weight>
SACCADE_INLINE void panel_kernel(const PanelProduct<Weight>& product) {
  static_assert(R <= 2 * MaxRows, "two blocks of rows at most");
  constexpr int kFirst = R < MaxRows ? R : MaxRows;
  for (int64_t offset = 0; offset < product.columns; offset += 2 * W) {
    PanelProduct<Weight> part = product;
    part.w += offset;
    part.y += offset;
    part.columns = std::min<int64_t>(2 * W, product.columns - offset);
    if (part.bias != nullptr) part.bias += offset;
    panel_block<W, kFirst>(part);
    if constexpr (R > MaxRows) {
      part.x += MaxRows;
      part.y += MaxRows * part.y_stride;
      panel_block<W, R - MaxRows>(part);
    }
  }
}

template <typename Weight>
using PanelKernel = void (*)(const PanelProduct<Weight>&);

#if defined(__x86_64__)

// AVX-512 (32 registers of 16 floats) takes a whole panel, 12 rows at a time; AVX2 (16 registers
// of 8 floats) half a panel, 6 rows at a time.
template <int R, typename Weight>
__attribute__((target("avx512f,fma"))) void panel_kernel_avx512(const PanelProduct<Weight>& product) {
  panel_kernel<16, 12, R>(product);
}

template <int R, typename Weight>
__attribute__((target("avx2,fma"))) void panel_kernel_avx2(const PanelProduct<Weight>& product) {
  panel_kernel<8, 6, R>(product);
}

// The kernel for `rows` (1 .. kBlockRows) rows of x.
template <typename Weight, size_t... R>
PanelKernel<Weight> panel_kernel_for(KernelIsa isa, int64_t rows, std::index_sequence<R...>) {
  static const PanelKernel<Weight> avx512[] = {panel_kernel_avx512<R + 1, Weight>...};
  static const PanelKernel<Weight> avx2[] = {panel_kernel_avx2<R + 1, Weight>...};
  return (isa == KernelIsa::avx512 ? avx512 : avx2)[rows - 1];
}

template <typename Weight>
PanelKernel<Weight> panel_kernel_for(KernelIsa isa, int64_t rows) {
  return panel_kernel_for<Weight>(isa, rows, std::make_index_sequence<kBlockRows>());
}

#endif

}  // namespace

PackedWeight::PackedWeight(const torch::Tensor& weight, const torch::Tensor& bias, WeightStorage storage) {
  if (weight.dim() != 2 || !takes_cpu_kernels(weight) ||
      (bias.defined() && (bias.dim() != 1 || bias.size(0) != weight.size(0) || !takes_cpu_kernels(bias)))) {
    throw std::invalid_argument(
        "PackedWeight expects a float32 CPU weight [N, K] and bias [N], got " + c10::str(weight.sizes()) +
        (bias.defined() ? " and " + c10::str(bias.sizes()) : ""));
  }
  out_features_ = weight.size(0);
  in_features_ = weight.size(1);
  const int64_t panels = (out_features_ + kPanelWidth - 1) / kPanelWidth;
  const torch::NoGradGuard no_grad;
  auto padded = torch::zeros({panels * kPanelWidth, in_features_}, weight.options());  // [P * 32, K]
  padded.narrow(0, 0, out_features_).copy_(weight);
  panels_ = padded.view({panels, kPanelWidth, in_features_}).transpose(1, 2).contiguous();  // [P, K, 32]
  if (storage == WeightStorage::bf16) panels_ = panels_.to(torch::kBFloat16);  // rounded to nearest even
  if (bias.defined()) bias_ = bias.detach().contiguous();
}

bool PackedWeight::supported() {
  return best_kernel_isa() != KernelIsa::none;
}

WeightStorage PackedWeight::storage() const {
  return panels_.scalar_type() == torch::kBFloat16 ? WeightStorage::bf16 : WeightStorage::fp32;
}

torch::Tensor PackedWeight::linear(const torch::Tensor& x) const {
  return linear(best_kernel_isa(), x);
}

torch::Tensor PackedWeight::linear(KernelIsa isa, const torch::Tensor& x) const {
  if (x.dim() != 2 || x.size(1) != in_features_ || !takes_cpu_kernels(x)) {
    throw std::invalid_argument(
        "PackedWeight of " + std::to_string(in_features_) + " inputs got x " + c10::str(x.sizes()));
  }
  if (isa == KernelIsa::none || (isa == KernelIsa::avx512 && best_kernel_isa() != KernelIsa::avx512)) {
    throw std::logic_error(
        std::string("PackedWeight::linear: this CPU does not run the ") + to_string(isa) + " kernel");
  }
#if defined(__x86_64__)
  RECORD_FUNCTION("saccade::packed_linear", std::vector<c10::IValue>({x}));  // named in profiles
  const auto rows = x.contiguous();
  const int64_t M = rows.size(0), N = out_features_;
  auto y = torch::empty({M, N}, rows.options());  // [M, N]
  if (storage() == WeightStorage::bf16) {
    multiply(isa, rows, reinterpret_cast<const uint16_t*>(panels_.data_ptr()), y);
  } else {
    multiply(isa, rows, panels_.data_ptr<float>(), y);
  }
  return y;
#else
  return torch::Tensor();
#endif
}

template <typename Weight>
void PackedWeight::multiply(
    KernelIsa isa, const torch::Tensor& rows, const Weight* w_data, torch::Tensor& y) const {
#if defined(__x86_64__)
  const int64_t M = rows.size(0), K = in_features_, N = out_features_;
  const int64_t panels = panels_.size(0);
  const float* x_data = rows.data_ptr<float>();
  const float* b_data = bias_.defined() ? bias_.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  // A chunk of x in blocks of kBlockRows rows, k-major: [blocks, K, kBlockRows]. Only the rows a
  // block has are read, so the last block's padding is never initialized.
  const auto pack_chunk = [&](int64_t chunk, std::vector<float>& packed_x) {
    packed_x.resize(static_cast<size_t>(kChunkRows * K));
    const int64_t chunk_rows = std::min(kChunkRows, M - chunk);
    for (int64_t r = 0; r < chunk_rows; ++r) {
      const float* source = x_data + (chunk + r) * K;
      float* target = packed_x.data() + (r / kBlockRows) * K * kBlockRows + r % kBlockRows;
      for (int64_t k = 0; k < K; ++k) target[k * kBlockRows] = source[k];
    }
  };
  const auto multiply_chunk = [&](int64_t chunk, const std::vector<float>& packed_x, int64_t begin,
                                  int64_t end) {
    const int64_t chunk_rows = std::min(kChunkRows, M - chunk);
    const int64_t blocks = (chunk_rows + kBlockRows - 1) / kBlockRows;
    for (int64_t panel = begin; panel < end; ++panel) {
      const int64_t column = panel * kPanelWidth, columns = std::min(kPanelWidth, N - column);
      for (int64_t k = 0; k < K; k += kDepth) {
        const int64_t depth = std::min(kDepth, K - k);
        const float* bias = b_data != nullptr && k + depth == K ? b_data + column : nullptr;
        for (int64_t block = 0; block < blocks; ++block) {
          const PanelProduct<Weight> product{
              depth,
              packed_x.data() + (block * K + k) * kBlockRows,
              w_data + (panel * K + k) * kPanelWidth,
              y_data + (chunk + block * kBlockRows) * N + column,
              N,
              columns,
              k > 0,
              bias};
          panel_kernel_for<Weight>(isa, std::min(kBlockRows, chunk_rows - block * kBlockRows))(product);
        }
      }
    }
  };
  const int64_t chunks = (M + kChunkRows - 1) / kChunkRows;
  if (chunks >= at::get_num_threads()) {
    // Many rows (the keys of a batch): each thread packs and multiplies its own chunks.
    at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
      std::vector<float> packed_x;
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        pack_chunk(chunk * kChunkRows, packed_x);
        multiply_chunk(chunk * kChunkRows, packed_x, 0, panels);
      }
    });
  } else {
    // A decoding step's rows: the threads share each packed chunk and split the panels.
    std::vector<float> packed_x;
    for (int64_t chunk = 0; chunk < M; chunk += kChunkRows) {
      pack_chunk(chunk, packed_x);
      at::parallel_for(
          0, panels, 1, [&](int64_t begin, int64_t end) { multiply_chunk(chunk, packed_x, begin, end); });
    }
  }
#endif
}

torch::Tensor PackedWeights::linear(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const bool kernels = !linear_needs_gradient(x, weight, bias) && PackedWeight::supported() && x.dim() == 2 &&
                       weight.dim() == 2 && x.size(1) == weight.size(1) && takes_cpu_kernels(x) &&
                       takes_cpu_kernels(weight) && (!bias.defined() || takes_cpu_kernels(bias));
  if (!kernels) return few_rows_linear(x, weight, bias);  // torch::linear, as the kernels do not take it
  const auto storage = DecodingPrecision::bf16_weights() ? WeightStorage::bf16 : WeightStorage::fp32;
  const Key key{
      weight.data_ptr(),
      weight.size(0),
      weight.size(1),
      weight.stride(0),
      weight.stride(1),
      bias.defined() ? bias.data_ptr() : nullptr,
      storage};
  if (x.size(0) <= kMaxRows) {
    if (storage == WeightStorage::fp32) return few_rows_linear(x, weight, bias);
    auto& rows = packs_->bf16_rows[key];
    if (!rows.defined()) rows = weight.detach().to(torch::kBFloat16).contiguous();  // [N, K]
    return few_rows_linear(x, rows, bias);
  }
  auto found = packs_->panels.find(key);
  if (found == packs_->panels.end())
    found = packs_->panels.emplace(key, PackedWeight(weight.detach(), bias, storage)).first;
  return found->second.linear(x);
}

int64_t PackedWeights::size() const {
  return static_cast<int64_t>(packs_->panels.size() + packs_->bf16_rows.size());
}

}  // namespace saccade
