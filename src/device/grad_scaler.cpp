// GradScaler: scale, unscale with an overflow check, update (see grad_scaler.h).
#include "device/grad_scaler.h"

#include <torch/torch.h>

namespace saccade {

GradScaler::GradScaler(bool enabled, double growth_factor, double backoff_factor, int64_t growth_interval)
    : enabled_(enabled),
      growth_factor_(growth_factor),
      backoff_factor_(backoff_factor),
      growth_interval_(growth_interval) {}

torch::Tensor GradScaler::scale(const torch::Tensor& loss) const {
  return enabled_ ? loss * state_.scale : loss;
}

bool GradScaler::unscale(const std::vector<torch::Tensor>& parameters) {
  found_overflow_ = false;
  if (!enabled_) return true;
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> finite;
  for (const auto& parameter : parameters) {
    const torch::Tensor& grad = parameter.grad();
    if (!grad.defined()) continue;
    grad.mul_(1.0 / state_.scale);
    finite.push_back(torch::isfinite(grad).all());
  }
  // One transfer for all the checks, not one per gradient.
  found_overflow_ = !finite.empty() && !torch::stack(finite).all().item<bool>();
  return !found_overflow_;
}

bool GradScaler::skip_overflowed_loss() {
  if (!enabled_ || state_.scale <= 1.0) return false;
  found_overflow_ = true;
  return true;
}

void GradScaler::update() {
  if (!enabled_) return;
  if (found_overflow_) {
    state_.scale *= backoff_factor_;
    state_.good_steps = 0;
  } else if (++state_.good_steps == growth_interval_) {
    state_.scale *= growth_factor_;
    state_.good_steps = 0;
  }
}

}  // namespace saccade
