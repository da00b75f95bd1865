// token_cross_entropy: the log-sum-exp of each row in one pass, softmax - one-hot in backward;
// log_softmax_rows from the same pass (see cross_entropy.h).
#include "kernels/cross_entropy.h"

#include <ATen/Parallel.h>
#include <ATen/record_function.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/functional/loss.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// A row's maximum m, returned, and log sum_v e^(x_v - m) in log_sum; kept apart, as a log-sum-exp
// of 60 would carry 4e-6 of absolute rounding into every probability.
template <int W>
SACCADE_INLINE float row_max_and_log_sum(const float* row, int64_t V, float& log_sum) {
  using Vec = Lanes<float, W>;
  const int64_t V_lanes = V - V % W;
  Vec high = Vec{} - std::numeric_limits<float>::infinity();
  for (int64_t v = 0; v < V_lanes; v += W) {
    const Vec x = load<W>(row + v);
    high = x > high ? x : high;
  }
  float largest = -std::numeric_limits<float>::infinity();
  for (int i = 0; i < W; ++i) largest = std::max(largest, high[i]);
  for (int64_t v = V_lanes; v < V; ++v) largest = std::max(largest, row[v]);
  Vec sums = {};
  for (int64_t v = 0; v < V_lanes; v += W) sums += exp_lanes(load<W>(row + v) - largest);
  float sum = sum_lanes(sums);
  for (int64_t v = V_lanes; v < V; ++v) sum += exp_lanes(load<1>(row + v) - largest)[0];
  log_sum = std::log(sum);
  return largest;
}

// The rows [begin, end) of logits [N, V]: each one's maximum m, log sum_v e^(x_v - m) and the NLL
// at the target, log-sum - (x_t - m).
template <int W>
SACCADE_INLINE void cross_entropy_rows(
    const float* logits,
    const int64_t* targets,
    float* row_max,
    float* log_sum,
    float* nll,
    int64_t begin,
    int64_t end,
    int64_t V) {
  for (int64_t n = begin; n < end; ++n) {
    const float* row = logits + n * V;
    row_max[n] = row_max_and_log_sum<W>(row, V, log_sum[n]);
    nll[n] = log_sum[n] - (row[targets[n]] - row_max[n]);
  }
}

// out[n, v] = (logits[n, v] - m[n]) - log_sum[n] for rows [begin, end), each written while it is
// still in cache from the pass that found m and log_sum.
template <int W>
SACCADE_INLINE void log_softmax_rows(const float* logits, float* out, int64_t begin, int64_t end, int64_t V) {
  const int64_t V_lanes = V - V % W;
  for (int64_t n = begin; n < end; ++n) {
    const float* row = logits + n * V;
    float* target = out + n * V;
    float shift = 0.0f;
    const float largest = row_max_and_log_sum<W>(row, V, shift);
    int64_t v = 0;
    for (; v < V_lanes; v += W) store(target + v, (load<W>(row + v) - largest) - shift);
    for (; v < V; ++v) target[v] = (row[v] - largest) - shift;
  }
}

// best[n] = the first v of row n's largest value for rows [begin, end), as torch::max ranks them:
// a NaN above every number, equal values by position. One pass: each lane keeps its largest value
// and where it first saw it; between lanes a tie goes to the lower position.
template <int W>
SACCADE_INLINE void argmax_rows(const float* scores, int64_t* best, int64_t begin, int64_t end, int64_t V) {
  using Vec = Lanes<float, W>;
  using Positions = Lanes<int32_t, W>;
  const int64_t V_lanes = V - V % W;
  Positions lane_positions = {};
  for (int i = 0; i < W; ++i) lane_positions[i] = i;
  for (int64_t n = begin; n < end; ++n) {
    const float* row = scores + n * V;
    int64_t at = 0;
    bool has_nan = false;
    if (V_lanes > 0) {
      Vec high = load<W>(row);
      Positions where = lane_positions, position = lane_positions, nan = high != high;
      for (int64_t v = W; v < V_lanes; v += W) {
        const Vec x = load<W>(row + v);
        position += W;
        const Positions above = x > high;
        high = above ? x : high;
        where = above ? position : where;
        nan |= x != x;
      }
      float top = high[0];
      at = where[0];
      for (int i = 0; i < W; ++i) {
        has_nan |= nan[i] != 0;
        if (high[i] > top || (high[i] == top && where[i] < at)) {
          top = high[i];
          at = where[i];
        }
      }
    }
    for (int64_t v = V_lanes; v < V; ++v) {
      has_nan |= std::isnan(row[v]);
      if (row[v] > row[at]) at = v;
    }
    if (has_nan) at = std::find_if(row, row + V, [](float x) { return std::isnan(x); }) - row;
    best[n] = at;
  }
}

// grad[n, v] = g[n] (exp(logits[n, v] - m[n] - log_sum[n]) - [v == target[n]]) for rows [begin, end).
template <int W>
SACCADE_INLINE void cross_entropy_backward_rows(
    const float* logits,
    const int64_t* targets,
    const float* row_max,
    const float* log_sum,
    const float* grad_nll,
    float* grad,
    int64_t begin,
    int64_t end,
    int64_t V) {
  const int64_t V_lanes = V - V % W;
  for (int64_t n = begin; n < end; ++n) {
    const float* row = logits + n * V;
    float* out = grad + n * V;
    const float g = grad_nll[n], largest = row_max[n], shift = log_sum[n];
    int64_t v = 0;
    for (; v < V_lanes; v += W) store(out + v, g * exp_lanes((load<W>(row + v) - largest) - shift));
    for (; v < V; ++v) out[v] = g * exp_lanes((load<1>(row + v) - largest) - shift)[0];
    out[targets[n]] -= g;
  }
}

struct CrossEntropyKernels {
  decltype(&cross_entropy_rows<1>) forward;
  decltype(&cross_entropy_backward_rows<1>) backward;
  decltype(&log_softmax_rows<1>) log_softmax;
  decltype(&argmax_rows<1>) argmax;
};

#if defined(__x86_64__)

// The kernels on one instruction set (`On`), `W` floats to a register.
template <template <auto> class On, int W>
constexpr CrossEntropyKernels cross_entropy_kernels_on = {
    On<&cross_entropy_rows<W>>::run, On<&cross_entropy_backward_rows<W>>::run, On<&log_softmax_rows<W>>::run,
    On<&argmax_rows<W>>::run};

const CrossEntropyKernels& cross_entropy_kernels(KernelIsa isa) {
  return isa == KernelIsa::avx512 ? cross_entropy_kernels_on<OnAvx512, 16>
                                  : cross_entropy_kernels_on<OnAvx2, 8>;
}

#else

const CrossEntropyKernels& cross_entropy_kernels(KernelIsa) {
  throw std::logic_error("the cross-entropy kernels are compiled for x86-64 only");
}

#endif

// Rows per task: a few rows of 10,000 words each are enough to share the threads' start-up.
int64_t grain(int64_t V) {
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, V));
}

class TokenCrossEntropy : public torch::autograd::Function<TokenCrossEntropy> {
 public:
  static torch::Tensor forward(
      torch::autograd::AutogradContext* ctx,
      KernelIsa isa,
      const torch::Tensor& logits,
      const torch::Tensor& targets) {
    RECORD_FUNCTION("saccade::token_cross_entropy", std::vector<c10::IValue>({logits}));  // named in profiles
    const auto x = logits.contiguous();
    const auto t = targets.to(torch::kLong).contiguous();
    const int64_t N = x.size(0), V = x.size(1);
    const int64_t* target = t.data_ptr<int64_t>();
    for (int64_t n = 0; n < N; ++n)
      TORCH_CHECK(target[n] >= 0 && target[n] < V, "Target ", target[n], " is out of bounds.");
    auto row_max = torch::empty({N}, x.options()), log_sum = torch::empty({N}, x.options());
    auto nll = torch::empty({N}, x.options());
    const auto kernel = cross_entropy_kernels(isa).forward;
    at::parallel_for(0, N, grain(V), [&](int64_t begin, int64_t end) {
      kernel(
          x.data_ptr<float>(), target, row_max.data_ptr<float>(), log_sum.data_ptr<float>(),
          nll.data_ptr<float>(), begin, end, V);
    });
    ctx->save_for_backward({x, row_max, log_sum, t});
    ctx->saved_data["isa"] = static_cast<int64_t>(isa);
    return nll;
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &x = saved[0], &row_max = saved[1], &log_sum = saved[2], &t = saved[3];
    const auto g = grads[0].contiguous();
    const int64_t N = x.size(0), V = x.size(1);
    auto grad = torch::empty_like(x);
    const auto kernel =
        cross_entropy_kernels(static_cast<KernelIsa>(ctx->saved_data["isa"].toInt())).backward;
    at::parallel_for(0, N, grain(V), [&](int64_t begin, int64_t end) {
      kernel(
          x.data_ptr<float>(), t.data_ptr<int64_t>(), row_max.data_ptr<float>(), log_sum.data_ptr<float>(),
          g.data_ptr<float>(), grad.data_ptr<float>(), begin, end, V);
    });
    return {torch::Tensor(), grad, torch::Tensor()};
  }
};

}  // namespace

torch::Tensor token_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets) {
  return token_cross_entropy(best_kernel_isa(), logits, targets);
}

torch::Tensor token_cross_entropy(KernelIsa isa, const torch::Tensor& logits, const torch::Tensor& targets) {
  if (isa == KernelIsa::none || logits.dim() != 2 || targets.dim() != 1 ||
      targets.size(0) != logits.size(0) || logits.size(1) == 0 || !takes_cpu_kernels(logits) ||
      !targets.device().is_cpu()) {
    return torch::nn::functional::cross_entropy(
        logits, targets, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  }
  return TokenCrossEntropy::apply(isa, logits, targets);
}

torch::Tensor log_softmax_rows(const torch::Tensor& logits) {
  return log_softmax_rows(best_kernel_isa(), logits);
}

torch::Tensor log_softmax_rows(KernelIsa isa, const torch::Tensor& logits) {
  if (isa == KernelIsa::none || logits.dim() != 2 || logits.size(1) == 0 || !takes_cpu_kernels(logits))
    return torch::log_softmax(logits, 1);
  RECORD_FUNCTION("saccade::log_softmax_rows", std::vector<c10::IValue>({logits}));  // named in profiles
  const auto x = logits.contiguous();
  const int64_t N = x.size(0), V = x.size(1);
  auto out = torch::empty_like(x);
  const auto kernel = cross_entropy_kernels(isa).log_softmax;
  at::parallel_for(0, N, grain(V), [&](int64_t begin, int64_t end) {
    kernel(x.data_ptr<float>(), out.data_ptr<float>(), begin, end, V);
  });
  return out;
}

torch::Tensor argmax_rows(const torch::Tensor& scores) {
  return argmax_rows(best_kernel_isa(), scores);
}

torch::Tensor argmax_rows(KernelIsa isa, const torch::Tensor& scores) {
  if (isa == KernelIsa::none || scores.dim() != 2 || scores.size(1) == 0 ||
      scores.size(1) > std::numeric_limits<int32_t>::max() || !takes_cpu_kernels(scores))
    return std::get<1>(scores.max(1));
  RECORD_FUNCTION("saccade::argmax_rows", std::vector<c10::IValue>({scores}));  // named in profiles
  const auto x = scores.contiguous();
  const int64_t N = x.size(0), V = x.size(1);
  auto best = torch::empty({N}, x.options().dtype(torch::kLong));
  const auto kernel = cross_entropy_kernels(isa).argmax;
  at::parallel_for(0, N, grain(V), [&](int64_t begin, int64_t end) {
    kernel(x.data_ptr<float>(), best.data_ptr<int64_t>(), begin, end, V);
  });
  return best;
}

}  // namespace saccade
