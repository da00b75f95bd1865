// FusedAdam: torch::optim::Adam's update in one pass per parameter (see fused_adam.h).
#include "train/fused_adam.h"

#include <ATen/Parallel.h>
#include <torch/torch.h>

#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels/kernel_isa.h"

namespace saccade {
namespace {

// The scalars of one parameter's update, as float (torch::optim::Adam casts them so).
struct AdamUpdate {
  float* parameter;
  const float* grad;
  float* exp_avg;
  float* exp_avg_sq;
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float weight_decay;  // 0: none
  float bias_correction2_sqrt, eps;
  float negative_step_size;  // -lr / bias_correction1
};

// Element i in the order of Adam::step's operations: grad + wd p, m beta1 + (1 - beta1) g,
// v beta2 + (1 - beta2) g g, sqrt(v) / sqrt(bc2) + eps, p + (-step) m / denom.
inline void adam_element(const AdamUpdate& u, int64_t i) {
  float g = u.grad[i];
  if (u.weight_decay != 0.0f) g = std::fma(u.parameter[i], u.weight_decay, g);
  const float m = std::fma(g, u.one_minus_beta1, u.exp_avg[i] * u.beta1);
  const float v = u.exp_avg_sq[i] * u.beta2 + u.one_minus_beta2 * g * g;
  const float denom = std::sqrt(v) / u.bias_correction2_sqrt + u.eps;
  u.exp_avg[i] = m;
  u.exp_avg_sq[i] = v;
  u.parameter[i] = u.parameter[i] + u.negative_step_size * m / denom;
}

#if defined(__x86_64__)
// Elements [begin, end), eight at a time. A memory-bound pass gains nothing from wider vectors,
// so one AVX2 body serves AVX-512 CPUs too.
__attribute__((target("avx2,fma"))) void adam_range(const AdamUpdate& u, int64_t begin, int64_t end) {
  const __m256 beta1 = _mm256_set1_ps(u.beta1), one_minus_beta1 = _mm256_set1_ps(u.one_minus_beta1);
  const __m256 beta2 = _mm256_set1_ps(u.beta2), one_minus_beta2 = _mm256_set1_ps(u.one_minus_beta2);
  const __m256 weight_decay = _mm256_set1_ps(u.weight_decay), eps = _mm256_set1_ps(u.eps);
  const __m256 correction = _mm256_set1_ps(u.bias_correction2_sqrt);
  const __m256 negative_step = _mm256_set1_ps(u.negative_step_size);
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    const __m256 p = _mm256_loadu_ps(u.parameter + i);
    __m256 g = _mm256_loadu_ps(u.grad + i);
    if (u.weight_decay != 0.0f) g = _mm256_fmadd_ps(p, weight_decay, g);
    const __m256 m =
        _mm256_fmadd_ps(g, one_minus_beta1, _mm256_mul_ps(_mm256_loadu_ps(u.exp_avg + i), beta1));
    const __m256 v = _mm256_fmadd_ps(
        _mm256_mul_ps(one_minus_beta2, g), g, _mm256_mul_ps(_mm256_loadu_ps(u.exp_avg_sq + i), beta2));
    const __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), correction), eps);
    _mm256_storeu_ps(u.exp_avg + i, m);
    _mm256_storeu_ps(u.exp_avg_sq + i, v);
    _mm256_storeu_ps(
        u.parameter + i, _mm256_add_ps(p, _mm256_div_ps(_mm256_mul_ps(negative_step, m), denom)));
  }
  for (; i < end; ++i) adam_element(u, i);
}
#endif

bool fused_pass_takes(const torch::Tensor& parameter, const torch::optim::AdamOptions& options) {
  const auto& grad = parameter.grad();
  return !options.amsgrad() && best_kernel_isa() != KernelIsa::none && takes_cpu_kernels(parameter) &&
         parameter.is_contiguous() && grad.defined() && !grad.is_sparse() &&
         grad.scalar_type() == torch::kFloat && grad.device().is_cpu() && grad.is_contiguous() &&
         grad.sizes() == parameter.sizes();
}

// The key of a parameter's state: its TensorImpl's address, as text in LibTorch 1.13 (written
// by an ostream, as its optimizers write it) and as the pointer in 2.x.
template <typename Optimizer>
auto state_key(Optimizer& optimizer, const torch::Tensor& parameter) {
  using Key = typename std::remove_reference_t<decltype(optimizer.state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream key;
    key << parameter.unsafeGetTensorImpl();
    return key.str();
  } else {
    return static_cast<Key>(parameter.unsafeGetTensorImpl());
  }
}

}  // namespace

torch::optim::AdamParamState* adam_state(torch::optim::Optimizer& optimizer, const torch::Tensor& parameter) {
  const auto found = optimizer.state().find(state_key(optimizer, parameter));
  return found == optimizer.state().end() ? nullptr
                                          : static_cast<torch::optim::AdamParamState*>(found->second.get());
}

bool FusedAdam::fused_pass_takes_all() {
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (const auto& parameter : group.params()) {
      if (parameter.grad().defined() && !fused_pass_takes(parameter, options)) return false;
    }
  }
  return true;
}

torch::Tensor FusedAdam::step(LossClosure closure) {
  if (!fused_pass_takes_all()) return torch::optim::Adam::step(closure);
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure != nullptr) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
#if defined(__x86_64__)
  for (auto& group : param_groups()) {
    const auto& options = static_cast<const torch::optim::AdamOptions&>(group.options());
    for (auto& parameter : group.params()) {
      if (!parameter.grad().defined()) continue;
      auto& slot = state()[state_key(*this, parameter)];
      if (!slot) {
        auto fresh = std::make_unique<torch::optim::AdamParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(parameter, torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(parameter, torch::MemoryFormat::Preserve));
        slot = std::move(fresh);
      }
      auto& adam = static_cast<torch::optim::AdamParamState&>(*slot);
      adam.step(adam.step() + 1);
      const auto [beta1, beta2] = options.betas();
      const double bias_correction1 = 1 - std::pow(beta1, adam.step());
      const double bias_correction2 = 1 - std::pow(beta2, adam.step());
      const AdamUpdate update{
          parameter.data_ptr<float>(),
          parameter.grad().data_ptr<float>(),
          adam.exp_avg().data_ptr<float>(),
          adam.exp_avg_sq().data_ptr<float>(),
          static_cast<float>(beta1),
          static_cast<float>(1 - beta1),
          static_cast<float>(beta2),
          static_cast<float>(1 - beta2),
          static_cast<float>(options.weight_decay()),
          static_cast<float>(std::sqrt(bias_correction2)),
          static_cast<float>(options.eps()),
          static_cast<float>(-options.lr() / bias_correction1)};
      at::parallel_for(
          0, parameter.numel(), 1 << 15, [&](int64_t begin, int64_t end) { adam_range(update, begin, end); });
      // As Adam's in-place operations do: what was derived from the weights (the decoders' packed
      // copies, kept while parameter_versions() stays the same) must see that they changed.
      for (const torch::Tensor* changed : {&parameter, &adam.exp_avg(), &adam.exp_avg_sq()})
        changed->unsafeGetTensorImpl()->bump_version();
    }
  }
#endif
  return loss;
}

}  // namespace saccade
