// PackedWeight: AVX-512 and AVX2 kernels over weights packed in k-major panels; PackedWeights:
// the per-product choice between them, few_rows_linear and torch::linear.
#include "kernels/packed_linear.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/nn/functional/linear.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "kernels/few_rows_linear.h"

namespace saccade {
namespace {

// K per pass: a [kDepth, kPanelWidth] slice of a panel (32 KiB) stays in L1 while every block of
// rows of a chunk meets it.
constexpr int64_t kDepth = 128;
// Rows of x packed per pass ([kChunkRows, K] stays in L2 and L3 while the panels stream by).
constexpr int64_t kChunkRows = 16 * kBlockRows;

#if defined(__x86_64__)

// y[r, 0:columns] (+)= sum_k x[k][r] w[k][0:columns] for r < R over `depth` values of k, from x
// packed [depth][kBlockRows] and a panel slice w [depth][kPanelWidth]. `accumulate` adds to what
// y holds (the earlier passes over K); `bias` (the last pass only) is added when not null.
template <int R>
__attribute__((target("avx512f"))) void panel_kernel(
    int64_t depth,
    const float* x,
    const float* w,
    float* y,
    int64_t y_stride,
    int64_t columns,
    bool accumulate,
    const float* bias) {
  __m512 acc[R][2];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m512 w0 = _mm512_loadu_ps(w + k * kPanelWidth);
    const __m512 w1 = _mm512_loadu_ps(w + k * kPanelWidth + 16);
    // Unrolled, so the accumulators live in registers.
#pragma GCC unroll 12
    for (int r = 0; r < R; ++r) {
      const __m512 v = _mm512_set1_ps(x[k * kBlockRows + r]);
      acc[r][0] = _mm512_fmadd_ps(v, w0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(v, w1, acc[r][1]);
    }
  }
  const __mmask16 low = columns >= 16 ? 0xFFFF : static_cast<__mmask16>((1u << columns) - 1);
  const __mmask16 high = columns >= 32  ? 0xFFFF
                         : columns > 16 ? static_cast<__mmask16>((1u << (columns - 16)) - 1)
                                        : 0;
  // Unrolled too: a loop indexing acc would keep the accumulators in memory, stored every step.
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    float* row = y + r * y_stride;
    __m512 a = acc[r][0], b = acc[r][1];
    if (accumulate) {
      a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(low, row));
      b = _mm512_add_ps(b, _mm512_maskz_loadu_ps(high, row + 16));
    }
    if (bias != nullptr) {
      a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(low, bias));
      b = _mm512_add_ps(b, _mm512_maskz_loadu_ps(high, bias + 16));
    }
    _mm512_mask_storeu_ps(row, low, a);
    _mm512_mask_storeu_ps(row + 16, high, b);
  }
}

// AVX2 has 16 registers of 8 floats: a block of R <= kAvx2Rows rows by half a panel (two
// vectors) keeps 2R accumulators, two W vectors and a broadcast in them. Same arguments as
// panel_kernel, with w and y at the half's first column, `columns` in 0 .. 16 and x's rows
// kBlockRows apart.
constexpr int kAvx2Rows = 6;

template <int R>
__attribute__((target("avx2,fma"))) void half_panel_kernel_avx2(
    int64_t depth,
    const float* x,
    const float* w,
    float* y,
    int64_t y_stride,
    int64_t columns,
    bool accumulate,
    const float* bias) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t k = 0; k < depth; ++k) {
    const __m256 w0 = _mm256_loadu_ps(w + k * kPanelWidth);
    const __m256 w1 = _mm256_loadu_ps(w + k * kPanelWidth + 8);
#pragma GCC unroll 6
    for (int r = 0; r < R; ++r) {
      const __m256 v = _mm256_broadcast_ss(x + k * kBlockRows + r);
      acc[r][0] = _mm256_fmadd_ps(v, w0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(v, w1, acc[r][1]);
    }
  }
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i low = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(columns)), lanes);
  const __m256i high = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(columns) - 8), lanes);
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    float* row = y + r * y_stride;
    __m256 a = acc[r][0], b = acc[r][1];
    if (accumulate) {
      a = _mm256_add_ps(a, _mm256_maskload_ps(row, low));
      b = _mm256_add_ps(b, _mm256_maskload_ps(row + 8, high));
    }
    if (bias != nullptr) {
      a = _mm256_add_ps(a, _mm256_maskload_ps(bias, low));
      b = _mm256_add_ps(b, _mm256_maskload_ps(bias + 8, high));
    }
    _mm256_maskstore_ps(row, low, a);
    _mm256_maskstore_ps(row + 8, high, b);
  }
}

// panel_kernel for AVX2: the panel in two halves of 16 columns, each in blocks of up to
// kAvx2Rows rows.
template <int R>
void panel_kernel_avx2(
    int64_t depth,
    const float* x,
    const float* w,
    float* y,
    int64_t y_stride,
    int64_t columns,
    bool accumulate,
    const float* bias) {
  constexpr int kFirst = R < kAvx2Rows ? R : kAvx2Rows;
  for (int64_t half = 0; half < 2 && columns > 16 * half; ++half) {
    const int64_t offset = 16 * half, half_columns = std::min<int64_t>(16, columns - offset);
    const float* half_bias = bias != nullptr ? bias + offset : nullptr;
    half_panel_kernel_avx2<kFirst>(
        depth, x, w + offset, y + offset, y_stride, half_columns, accumulate, half_bias);
    if constexpr (R > kAvx2Rows) {
      half_panel_kernel_avx2<R - kAvx2Rows>(
          depth, x + kAvx2Rows, w + offset, y + kAvx2Rows * y_stride + offset, y_stride, half_columns,
          accumulate, half_bias);
    }
  }
}

using PanelKernel =
    void (*)(int64_t, const float*, const float*, float*, int64_t, int64_t, bool, const float*);

PanelKernel panel_kernel_for(KernelIsa isa, int64_t rows) {
  static const PanelKernel avx512[kBlockRows] = {panel_kernel<1>,  panel_kernel<2>,  panel_kernel<3>,
                                                 panel_kernel<4>,  panel_kernel<5>,  panel_kernel<6>,
                                                 panel_kernel<7>,  panel_kernel<8>,  panel_kernel<9>,
                                                 panel_kernel<10>, panel_kernel<11>, panel_kernel<12>};
  static const PanelKernel avx2[kBlockRows] = {
      panel_kernel_avx2<1>, panel_kernel_avx2<2>,  panel_kernel_avx2<3>,  panel_kernel_avx2<4>,
      panel_kernel_avx2<5>, panel_kernel_avx2<6>,  panel_kernel_avx2<7>,  panel_kernel_avx2<8>,
      panel_kernel_avx2<9>, panel_kernel_avx2<10>, panel_kernel_avx2<11>, panel_kernel_avx2<12>};
  return (isa == KernelIsa::avx512 ? avx512 : avx2)[rows - 1];
}

#endif

}  // namespace

PackedWeight::PackedWeight(const torch::Tensor& weight, const torch::Tensor& bias) {
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
  if (bias.defined()) bias_ = bias.detach().contiguous();
}

bool PackedWeight::supported() {
  return best_kernel_isa() != KernelIsa::none;
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
  const int64_t M = rows.size(0), K = in_features_, N = out_features_;
  auto y = torch::empty({M, N}, rows.options());  // [M, N]
  const int64_t panels = panels_.size(0);
  const float* x_data = rows.data_ptr<float>();
  const float* w_data = panels_.data_ptr<float>();
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
          panel_kernel_for(isa, std::min(kBlockRows, chunk_rows - block * kBlockRows))(
              depth, packed_x.data() + (block * K + k) * kBlockRows, w_data + (panel * K + k) * kPanelWidth,
              y_data + (chunk + block * kBlockRows) * N + column, N, columns, k > 0, bias);
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
  return y;
#else
  return torch::Tensor();
#endif
}

torch::Tensor PackedWeights::linear(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const bool packable = !linear_needs_gradient(x, weight, bias) && PackedWeight::supported() &&
                        x.dim() == 2 && weight.dim() == 2 && x.size(0) > kMaxRows &&
                        x.size(1) == weight.size(1) && takes_cpu_kernels(x) && takes_cpu_kernels(weight) &&
                        (!bias.defined() || takes_cpu_kernels(bias));
  if (!packable) return few_rows_linear(x, weight, bias);
  const Key key{weight.data_ptr(), weight.size(0),   weight.size(1),
                weight.stride(0),  weight.stride(1), bias.defined() ? bias.data_ptr() : nullptr};
  auto found = packs_->find(key);
  if (found == packs_->end()) found = packs_->emplace(key, PackedWeight(weight.detach(), bias)).first;
  return found->second.linear(x);
}

}  // namespace saccade
