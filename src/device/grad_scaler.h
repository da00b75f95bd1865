// GradScaler: dynamic loss scaling for fp16 training, as torch.cuda.amp.GradScaler does it.
//
//   GradScaler scaler(placement.precision == Precision::fp16);   // disabled: every call is a no-op
//   scaler.scale(loss).backward();
//   (all-reduce the gradients)
//   if (scaler.unscale(parameters)) optimizer.step();             // false: an inf or NaN, skip
//   scaler.update();
//
// fp16 gradients of small losses underflow to zero; multiplying the loss by a large scale S keeps
// them representable, and dividing the gradients by S before the step undoes it. When a gradient
// overflows, the step is skipped and S halves; after `growth_interval` good steps in a row S
// doubles. Written in plain tensor ops, so it runs (and is tested) on any device.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace saccade {

struct GradScalerState {
  double scale = 65536.0;  // 2^16, PyTorch's initial scale
  int64_t good_steps = 0;  // steps since the scale last changed without an overflow
};

class GradScaler {
 public:
  explicit GradScaler(
      bool enabled, double growth_factor = 2.0, double backoff_factor = 0.5, int64_t growth_interval = 2000);

  bool enabled() const { return enabled_; }
  // loss * S (the loss itself when disabled).
  torch::Tensor scale(const torch::Tensor& loss) const;
  // Divides every defined gradient of `parameters` by S; returns whether all are finite. A
  // disabled scaler returns true without touching them.
  bool unscale(const std::vector<torch::Tensor>& parameters);
  // Counts a loss that overflowed before backward like overflowing gradients: the step is skipped
  // and update() lowers S. Returns false when S is already at most 1, where lowering it cannot
  // help any more (the run diverges), and for a disabled scaler.
  bool skip_overflowed_loss();
  // Adjusts S after a step whose gradients unscale() found finite or not.
  void update();

  const GradScalerState& state() const { return state_; }
  void set_state(const GradScalerState& state) { state_ = state; }

 private:
  bool enabled_;
  double growth_factor_, backoff_factor_;
  int64_t growth_interval_;
  GradScalerState state_;
  bool found_overflow_ = false;
};

}  // namespace saccade
