// few_rows_linear: one kernel over vector lanes, compiled for AVX2 and AVX-512, that streams W
// (float32 or bf16) once per group of kFewRows rows of x.
#include "kernels/few_rows_linear.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// y[r, n] for rows r < R of x and n in [n_begin, n_end), RowsOfW rows of W at a time, W values
// of k per step: R x RowsOfW accumulators, RowsOfW vectors of W and one of x fill the
// registers (AVX2: 16 of 8 floats with RowsOfW = 2; AVX-512: 32 of 16 with RowsOfW = 4, for
// R <= kFewRows). `Weight` is float, or uint16_t for bf16 weights widened as they load.
template <typename Weight>
struct FewRowsProduct {
  const float* x;  // [R, K], rows x_stride apart
  int64_t x_stride;
  const Weight* w;  // [N, K], rows w_stride apart
  int64_t w_stride;
  int64_t K;
  const float* bias;  // [N] or nullptr
  float* y;           // [R, N], rows y_stride apart
  int64_t y_stride;
};

template <int W, int RowsOfW, int R, typename Weight>
SACCADE_INLINE void few_rows_block(const FewRowsProduct<Weight>& product, int64_t n_begin, int64_t n_end) {
  const auto [x, x_stride, w, w_stride, K, bias, y, y_stride] = product;
  const int64_t K_lanes = K - K % W;
  for (int64_t n = n_begin; n < n_end; n += RowsOfW) {
    const Weight* rows[RowsOfW];
    for (int j = 0; j < RowsOfW; ++j) rows[j] = w + std::min(n + j, n_end - 1) * w_stride;
    // Every loop over the accumulators is unrolled, so that they live in registers.
    Lanes<float, W> acc[R][RowsOfW];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) acc[r][j] = Lanes<float, W>{};
    }
    // The same place in the rows of W four passes ahead, asked for now: each row is a short
    // stream (2 KB at K = 512) that the hardware prefetcher does not ramp up for in time.
    const uintptr_t ahead = static_cast<uintptr_t>(4 * RowsOfW * w_stride) * sizeof(Weight);
    for (int64_t k = 0; k < K_lanes; k += W) {
      Lanes<float, W> wv[RowsOfW];
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) {
        __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(rows[j] + k) + ahead));
        wv[j] = load_floats<W>(rows[j] + k);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const auto v = load<W>(x + r * x_stride + k);
#pragma GCC unroll 4
        for (int j = 0; j < RowsOfW; ++j) acc[r][j] += v * wv[j];
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) {
        if (n + j < n_end) {
          float sum = sum_lanes(acc[r][j]);
          // One rounding per product, as the vector loop's FMAs, whatever GCC would contract.
          for (int64_t k = K_lanes; k < K; ++k)
            sum = std::fma(x[r * x_stride + k], load_floats<1>(rows[j] + k)[0], sum);
          y[r * y_stride + n + j] = bias ? sum + bias[n + j] : sum;
        }
      }
    }
  }
}

// The rows n_begin .. n_end of W.
template <typename Weight>
using FewRowsKernel = void (*)(const FewRowsProduct<Weight>&, int64_t n_begin, int64_t n_end);

#if defined(__x86_64__)

template <int R, typename Weight>
__attribute__((target("avx2,fma"))) void few_rows_kernel_avx2(
    const FewRowsProduct<Weight>& product, int64_t n_begin, int64_t n_end) {
  few_rows_block<8, 2, R>(product, n_begin, n_end);
}

template <int R, typename Weight>
__attribute__((target("avx512f,fma"))) void few_rows_kernel_avx512(
    const FewRowsProduct<Weight>& product, int64_t n_begin, int64_t n_end) {
  few_rows_block<16, 4, R>(product, n_begin, n_end);
}

// The kernel for `rows` (1 .. kFewRows) rows of x.
template <typename Weight, size_t... R>
FewRowsKernel<Weight> kernel_for(KernelIsa isa, int64_t rows, std::index_sequence<R...>) {
  static const FewRowsKernel<Weight> avx2[] = {few_rows_kernel_avx2<R + 1, Weight>...};
  static const FewRowsKernel<Weight> avx512[] = {few_rows_kernel_avx512<R + 1, Weight>...};
  return (isa == KernelIsa::avx512 ? avx512 : avx2)[rows - 1];
}

template <typename Weight>
FewRowsKernel<Weight> kernel_for(KernelIsa isa, int64_t rows) {
  return kernel_for<Weight>(isa, rows, std::make_index_sequence<kFewRows>());
}

#endif

// bf16 weights, whose bits the kernels widen as they load.
bool is_bf16_on_cpu(const torch::Tensor& t) {
  return t.device().is_cpu() && t.scalar_type() == torch::kBFloat16;
}

// torch::linear, of a bf16 weight's float32 values when x is float32 on the CPU (autocast and
// every other dtype see the weight as it is).
torch::Tensor plain_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  const bool widen = is_bf16_on_cpu(weight) && x.scalar_type() == torch::kFloat;
  return torch::nn::functional::linear(x, widen ? weight.to(torch::kFloat) : weight, bias);
}

bool takes_fast_path(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return !linear_needs_gradient(x, weight, bias) && x.dim() == 2 && weight.dim() == 2 && x.size(0) >= 1 &&
         x.size(0) <= kMaxRows && x.size(1) == weight.size(1) && takes_cpu_kernels(x) &&
         (takes_cpu_kernels(weight) || is_bf16_on_cpu(weight)) && weight.stride(1) == 1 &&
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
  if (isa == KernelIsa::none || !takes_fast_path(x, weight, bias)) return plain_linear(x, weight, bias);
#if defined(__x86_64__)
  RECORD_FUNCTION("saccade::few_rows_linear", std::vector<c10::IValue>({x, weight}));  // named in profiles
  const auto rows = x.contiguous();                                                    // [M, K]
  const auto b = bias.defined() ? bias.contiguous() : bias;
  const int64_t M = rows.size(0), K = rows.size(1), N = weight.size(0);
  auto y = torch::empty({M, N}, rows.options());  // [M, N]
  const float* x_data = rows.data_ptr<float>();
  const float* b_data = b.defined() ? b.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  // Tasks of 16 rows of W; within a task every group of up to kFewRows rows of x meets the same
  // rows of W, which stay in cache after the first group.
  constexpr int64_t kTaskRows = 16;
  const int64_t tasks = (N + kTaskRows - 1) / kTaskRows;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, K * M * kTaskRows));
  const auto multiply = [&](const auto* w_data) {
    using Weight = std::remove_cv_t<std::remove_pointer_t<decltype(w_data)>>;
    at::parallel_for(0, tasks, grain, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n_begin = task * kTaskRows, n_end = std::min(N, n_begin + kTaskRows);
        for (int64_t row = 0; row < M; row += kFewRows) {
          const int64_t group = std::min(kFewRows, M - row);
          const FewRowsProduct<Weight> product{x_data + row * K, K, w_data, weight.stride(0), K, b_data,
                                               y_data + row * N, N};
          kernel_for<Weight>(isa, group)(product, n_begin, n_end);
        }
      }
    });
  };
  if (weight.scalar_type() == torch::kBFloat16) {
    multiply(reinterpret_cast<const uint16_t*>(weight.data_ptr()));
  } else {
    multiply(weight.data_ptr<float>());
  }
  return y;
#else
  return plain_linear(x, weight, bias);
#endif
}

}  // namespace saccade
