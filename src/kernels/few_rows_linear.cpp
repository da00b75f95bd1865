// few_rows_linear: one kernel over vector lanes, compiled for AVX2 and AVX-512, that streams W
// (float32 or bf16) once per group of kFewRows rows of x.
#include "kernels/few_rows_linear.h"

#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <ATen/record_function.h>
#include <torch/nn/functional/linear.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// y[r, n] for rows r < R of x and n in [n_begin, n_end), RowsOfW rows of W at a time, W values
// of k per step: R x RowsOfW accumulators, RowsOfW vectors of W and one of x fill the
// registers (AVX2: 16 of 8 floats with RowsOfW = 2; AVX-512: 32 of 16 with RowsOfW = 4, for
// R <= kFewRows). `Weight` is float, or uint16_t for bf16 weights widened as they load; `Input`
// is float, or uint16_t for x rounded to bf16 (the dot-product kernel).
template <typename Weight, typename Input = float>
struct FewRowsProduct {
  const Input* x;  // [R, K], rows x_stride apart
  int64_t x_stride;
  const Weight* w;  // [N, K], rows w_stride apart
  int64_t w_stride;
  int64_t K;
  const float* bias;  // [N] or nullptr
  float* y;           // [R, N], rows y_stride apart
  int64_t y_stride;
};

// The RowsOfW rows of W from row n on (the last row repeated past n_end).
template <int RowsOfW, typename Weight, typename Input>
SACCADE_INLINE void weight_rows(
    const FewRowsProduct<Weight, Input>& product, int64_t n, int64_t n_end, const Weight* (&rows)[RowsOfW]) {
  for (int j = 0; j < RowsOfW; ++j) rows[j] = product.w + std::min(n + j, n_end - 1) * product.w_stride;
}

// Asks for the same place in a row of W four passes ahead: each row is a short stream (2 KB at
// K = 512) that the hardware prefetcher does not ramp up for in time.
template <int RowsOfW, typename Weight>
SACCADE_INLINE void prefetch_ahead(const Weight* at, int64_t w_stride) {
  __builtin_prefetch(reinterpret_cast<const char*>(at) + 4 * RowsOfW * w_stride * sizeof(Weight));
}

// y[r, n + j] from the vector loop's sum over k < K_lanes: the tail k >= K_lanes, then the bias.
template <typename Weight, typename Input>
SACCADE_INLINE void finish_output(
    const FewRowsProduct<Weight, Input>& product,
    int r,
    int64_t column,
    const Weight* row,
    int64_t K_lanes,
    float sum) {
  const Input* x = product.x + r * product.x_stride;
  // One rounding per product, as the vector loop's FMAs, whatever GCC would contract.
  for (int64_t k = K_lanes; k < product.K; ++k)
    sum = std::fma(load_floats<1>(x + k)[0], load_floats<1>(row + k)[0], sum);
  product.y[r * product.y_stride + column] = product.bias ? sum + product.bias[column] : sum;
}

template <int W, int RowsOfW, int R, typename Weight>
SACCADE_INLINE void few_rows_block(const FewRowsProduct<Weight>& product, int64_t n_begin, int64_t n_end) {
  const int64_t K_lanes = product.K - product.K % W;
  for (int64_t n = n_begin; n < n_end; n += RowsOfW) {
    const Weight* rows[RowsOfW];
    weight_rows(product, n, n_end, rows);
    // Every loop over the accumulators is unrolled, so that they live in registers.
    Lanes<float, W> acc[R][RowsOfW];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) acc[r][j] = Lanes<float, W>{};
    }
    for (int64_t k = 0; k < K_lanes; k += W) {
      Lanes<float, W> wv[RowsOfW];
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) {
        prefetch_ahead<RowsOfW>(rows[j] + k, product.w_stride);
        wv[j] = load_floats<W>(rows[j] + k);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const auto v = load<W>(product.x + r * product.x_stride + k);
#pragma GCC unroll 4
        for (int j = 0; j < RowsOfW; ++j) acc[r][j] += v * wv[j];
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) {
        if (n + j < n_end) finish_output(product, r, n + j, rows[j], K_lanes, sum_lanes(acc[r][j]));
      }
    }
  }
}

// The rows n_begin .. n_end of W.
template <typename Weight>
using FewRowsKernel = void (*)(const FewRowsProduct<Weight>&, int64_t n_begin, int64_t n_end);

#if defined(__x86_64__)

// bf16 x and W by VDPBF16PS (AVX-512 BF16): each instruction multiplies 16 pairs of bf16 values
// (32 k) exactly and adds both products of a pair into a float32 lane; 4 rows of W at a time,
// as few_rows_block on AVX-512, with half its instructions per value of W.
template <int R>
__attribute__((target("avx512f,avx512bf16,fma"))) void few_rows_kernel_bf16_dot(
    const FewRowsProduct<uint16_t, uint16_t>& product, int64_t n_begin, int64_t n_end) {
  constexpr int RowsOfW = 4, kPerStep = 32;
  const int64_t K_lanes = product.K - product.K % kPerStep;
  for (int64_t n = n_begin; n < n_end; n += RowsOfW) {
    const uint16_t* rows[RowsOfW];
    weight_rows(product, n, n_end, rows);
    __m512 acc[R][RowsOfW];
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) acc[r][j] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < K_lanes; k += kPerStep) {
      __m512bh wv[RowsOfW];
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) {
        prefetch_ahead<RowsOfW>(rows[j] + k, product.w_stride);
        wv[j] = reinterpret_cast<__m512bh>(_mm512_loadu_si512(rows[j] + k));
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) {
        const auto v = reinterpret_cast<__m512bh>(_mm512_loadu_si512(product.x + r * product.x_stride + k));
#pragma GCC unroll 4
        for (int j = 0; j < RowsOfW; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], v, wv[j]);
      }
    }
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
#pragma GCC unroll 4
      for (int j = 0; j < RowsOfW; ++j) {
        if (n + j < n_end) finish_output(product, r, n + j, rows[j], K_lanes, sum_lanes(acc[r][j]));
      }
    }
  }
}

template <size_t... R>
auto bf16_dot_kernel_for(int64_t rows, std::index_sequence<R...>) {
  static void (*const kernels[])(
      const FewRowsProduct<uint16_t, uint16_t>&, int64_t, int64_t) = {few_rows_kernel_bf16_dot<R + 1>...};
  return kernels[rows - 1];
}

// The kernel for `rows` (1 .. kFewRows) rows of x.
template <typename Weight, size_t... R>
FewRowsKernel<Weight> kernel_for(KernelIsa isa, int64_t rows, std::index_sequence<R...>) {
  static const FewRowsKernel<Weight> avx2[] = {OnAvx2<&few_rows_block<8, 2, R + 1, Weight>>::run...};
  static const FewRowsKernel<Weight> avx512[] = {OnAvx512<&few_rows_block<16, 4, R + 1, Weight>>::run...};
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

Bf16Product best_bf16_product() {
  return has_amx_bf16() ? Bf16Product::amx : has_avx512_bf16() ? Bf16Product::dot : Bf16Product::widen;
}

const char* to_string(Bf16Product product) {
  switch (product) {
    case Bf16Product::amx:
      return "AMX BF16 tiles";
    case Bf16Product::dot:
      return "AVX-512 BF16 dot products";
    case Bf16Product::widen:
      break;
  }
  return "widened to float32";
}

torch::Tensor few_rows_linear(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return few_rows_linear(best_kernel_isa(), x, weight, bias);
}

torch::Tensor few_rows_linear(
    KernelIsa isa,
    const torch::Tensor& x,
    const torch::Tensor& weight,
    const torch::Tensor& bias,
    Bf16Product bf16_product) {
  if (isa == KernelIsa::none || !takes_fast_path(x, weight, bias)) return plain_linear(x, weight, bias);
  const bool dot = bf16_product != Bf16Product::widen && weight.scalar_type() == torch::kBFloat16;
  if (dot && (isa != KernelIsa::avx512 || !has_avx512_bf16()))
    throw std::logic_error("few_rows_linear: this CPU has no AVX-512 BF16 dot products");
#if defined(__x86_64__)
  RECORD_FUNCTION("saccade::few_rows_linear", std::vector<c10::IValue>({x, weight}));  // named in profiles
  // The dot products take x rounded to bf16 (to nearest even, as LibTorch rounds).
  const auto rows = dot ? x.to(torch::kBFloat16).contiguous() : x.contiguous();  // [M, K]
  const auto b = bias.defined() ? bias.contiguous() : bias;
  const int64_t M = rows.size(0), K = rows.size(1), N = weight.size(0);
  auto y = torch::empty({M, N}, x.options());  // [M, N]
  const float* b_data = b.defined() ? b.data_ptr<float>() : nullptr;
  float* y_data = y.data_ptr<float>();
  // Tasks of 16 rows of W; within a task every group of up to kFewRows rows of x meets the same
  // rows of W, which stay in cache after the first group.
  constexpr int64_t kTaskRows = 16;
  const int64_t tasks = (N + kTaskRows - 1) / kTaskRows;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(1, K * M * kTaskRows));
  const auto multiply = [&](const auto* x_data, const auto* w_data, const auto& kernel_of_group) {
    using Input = std::remove_cv_t<std::remove_pointer_t<decltype(x_data)>>;
    using Weight = std::remove_cv_t<std::remove_pointer_t<decltype(w_data)>>;
    at::parallel_for(0, tasks, grain, [&](int64_t begin, int64_t end) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t n_begin = task * kTaskRows, n_end = std::min(N, n_begin + kTaskRows);
        for (int64_t row = 0; row < M; row += kFewRows) {
          const int64_t group = std::min(kFewRows, M - row);
          const FewRowsProduct<Weight, Input> product{
              x_data + row * K, K, w_data, weight.stride(0), K, b_data, y_data + row * N, N};
          kernel_of_group(group)(product, n_begin, n_end);
        }
      }
    });
  };
  const auto* bf16_weight = reinterpret_cast<const uint16_t*>(weight.data_ptr());
  if (dot) {
    multiply(reinterpret_cast<const uint16_t*>(rows.data_ptr()), bf16_weight, [](int64_t group) {
      return bf16_dot_kernel_for(group, std::make_index_sequence<kFewRows>());
    });
  } else if (weight.scalar_type() == torch::kBFloat16) {
    multiply(rows.data_ptr<float>(), bf16_weight, [isa](int64_t group) {
      return kernel_for<uint16_t>(isa, group);
    });
  } else {
    multiply(rows.data_ptr<float>(), weight.data_ptr<float>(), [isa](int64_t group) {
      return kernel_for<float>(isa, group);
    });
  }
  return y;
#else
  return plain_linear(x, weight, bias);
#endif
}

}  // namespace saccade
