// few_rows_linear: AVX2/FMA and AVX-512 kernels that stream W once per group of kFewRows rows of x.
#include "kernels/few_rows_linear.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <torch/nn/functional/linear.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>

namespace saccade {
namespace {

#if defined(__x86_64__)

__attribute__((target("avx2,fma"))) inline float horizontal_sum(__m256 v) {
  __m128 sum = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  sum = _mm_add_ps(sum, _mm_movehl_ps(sum, sum));
  sum = _mm_add_ss(sum, _mm_movehdup_ps(sum));
  return _mm_cvtss_f32(sum);
}

// Outputs y[r, n] for rows r < R and n in [n_begin, n_end), two rows of W at a time: 2R
// accumulators, two W vectors and one x vector fit AVX2's 16 registers for R <= kFewRows.
template <int R>
__attribute__((target("avx2,fma"))) void few_rows_kernel_avx2(
    const float* x,
    int64_t x_stride,
    const float* w,
    int64_t w_stride,
    int64_t K,
    int64_t n_begin,
    int64_t n_end,
    const float* bias,
    float* y,
    int64_t y_stride) {
  const int64_t K8 = K - K % 8;
  for (int64_t n = n_begin; n < n_end; n += 2) {
    const bool pair = n + 1 < n_end;
    const float* w0 = w + n * w_stride;
    const float* w1 = pair ? w0 + w_stride : w0;
    __m256 acc0[R], acc1[R];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
    for (int64_t k = 0; k < K8; k += 8) {
      const __m256 a = _mm256_loadu_ps(w0 + k), b = _mm256_loadu_ps(w1 + k);
      // Unrolled, so the accumulators live in registers.
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m256 v = _mm256_loadu_ps(x + r * x_stride + k);
        acc0[r] = _mm256_fmadd_ps(v, a, acc0[r]);
        acc1[r] = _mm256_fmadd_ps(v, b, acc1[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      float s0 = horizontal_sum(acc0[r]), s1 = horizontal_sum(acc1[r]);
      for (int64_t k = K8; k < K; ++k) {
        s0 += x[r * x_stride + k] * w0[k];
        s1 += x[r * x_stride + k] * w1[k];
      }
      y[r * y_stride + n] = bias ? s0 + bias[n] : s0;
      if (pair) y[r * y_stride + n + 1] = bias ? s1 + bias[n + 1] : s1;
    }
  }
}

__attribute__((target("avx512f"))) inline float horizontal_sum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float sum = 0.0f;
  for (const float lane : lanes) sum += lane;
  return sum;
}

// The AVX-512 kernel: four rows of W at a time (4R accumulators, four W vectors and one x
// vector fit the 32 registers for R <= kFewRows).
template <int R>
__attribute__((target("avx512f"))) void few_rows_kernel_avx512(
    const float* x,
    int64_t x_stride,
    const float* w,
    int64_t w_stride,
    int64_t K,
    int64_t n_begin,
    int64_t n_end,
    const float* bias,
    float* y,
    int64_t y_stride) {
  constexpr int kRowsOfW = 4;
  const int64_t K16 = K - K % 16;
  for (int64_t n = n_begin; n < n_end; n += kRowsOfW) {
    const float* rows[kRowsOfW];
    for (int j = 0; j < kRowsOfW; ++j) rows[j] = w + std::min(n + j, n_end - 1) * w_stride;
    __m512 acc[R][kRowsOfW];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < kRowsOfW; ++j) acc[r][j] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K16; k += 16) {
      __m512 wv[kRowsOfW];
#pragma GCC unroll 4
      for (int j = 0; j < kRowsOfW; ++j) wv[j] = _mm512_loadu_ps(rows[j] + k);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const __m512 v = _mm512_loadu_ps(x + r * x_stride + k);
#pragma GCC unroll 4
        for (int j = 0; j < kRowsOfW; ++j) acc[r][j] = _mm512_fmadd_ps(v, wv[j], acc[r][j]);
      }
    }
    for (int r = 0; r < R; ++r) {
      for (int j = 0; j < kRowsOfW && n + j < n_end; ++j) {
        float sum = horizontal_sum(acc[r][j]);
        for (int64_t k = K16; k < K; ++k) sum += x[r * x_stride + k] * rows[j][k];
        y[r * y_stride + n + j] = bias ? sum + bias[n + j] : sum;
      }
    }
  }
}

using Kernel = void (*)(
    const float*, int64_t, const float*, int64_t, int64_t, int64_t, int64_t, const float*, float*, int64_t);

Kernel kernel_for(KernelIsa isa, int64_t rows) {
  static const Kernel avx2_kernels[kFewRows] = {few_rows_kernel_avx2<1>, few_rows_kernel_avx2<2>,
                                                few_rows_kernel_avx2<3>, few_rows_kernel_avx2<4>,
                                                few_rows_kernel_avx2<5>, few_rows_kernel_avx2<6>};
  static const Kernel avx512_kernels[kFewRows] = {few_rows_kernel_avx512<1>, few_rows_kernel_avx512<2>,
                                                  few_rows_kernel_avx512<3>, few_rows_kernel_avx512<4>,
                                                  few_rows_kernel_avx512<5>, few_rows_kernel_avx512<6>};
  return (isa == KernelIsa::avx512 ? avx512_kernels : avx2_kernels)[rows - 1];
}

#endif

bool takes_fast_path(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return !linear_needs_gradient(x, weight, bias) && x.dim() == 2 && weight.dim() == 2 && x.size(0) >= 1 &&
         x.size(0) <= kMaxRows && x.size(1) == weight.size(1) && takes_cpu_kernels(x) &&
         takes_cpu_kernels(weight) && weight.stride(1) == 1 &&
         (!bias.defined() || (takes_cpu_kernels(bias) && bias.dim() == 1 && bias.size(0) == weight.size(0)));
}

}  // namespace

bool linear_needs_gradient(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return at::GradMode::is_enabled() &&
         (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
}

torch::Tensor few_rows_linear(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return few_rows_linear(best_kernel_isa(), x, weight, bias);
}

torch::Tensor few_rows_linear(
    KernelIsa isa, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (isa == KernelIsa::none || !takes_fast_path(x, weight, bias))
    return torch::nn::functional::linear(x, weight, bias);
#if defined(__x86_64__)
  RECORD_FUNCTION("saccade::few_rows_linear", std::vector<c10::IValue>({x, weight}));  // named in profiles
  const auto rows = x.contiguous();                                                    // [M, K]
  const auto b = bias.defined() ? bias.contiguous() : bias;
  const int64_t M = rows.size(0), K = rows.size(1), N = weight.size(0);
  auto y = torch::empty({M, N}, rows.options());  // [M, N]
  const float* x_data = rows.data_ptr<float>();
  const float* w_data = weight.data_ptr<float>();
  const float* b_data = b.defined() ? b.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  // Tasks of 16 rows of W; within a task every group of up to kFewRows rows of x meets the same
  // rows of W, which stay in cache after the first group.
  constexpr int64_t kTaskRows = 16;
  const int64_t tasks = (N + kTaskRows - 1) / kTaskRows;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, K * M * kTaskRows));
  at::parallel_for(0, tasks, grain, [&](int64_t begin, int64_t end) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t n_begin = task * kTaskRows, n_end = std::min(N, n_begin + kTaskRows);
      for (int64_t row = 0; row < M; row += kFewRows) {
        const int64_t group = std::min(kFewRows, M - row);
        kernel_for(isa, group)(
            x_data + row * K, K, w_data, weight.stride(0), K, n_begin, n_end, b_data, y_data + row * N, N);
      }
    }
  });
  return y;
#else
  return torch::nn::functional::linear(x, weight, bias);
#endif
}

}  // namespace saccade
