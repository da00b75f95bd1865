// Adam whose update of a CPU float32 parameter is one pass over its memory.
//
//   FusedAdam optimizer(parameters, torch::optim::AdamOptions(4e-4));   // as torch::optim::Adam
//
// torch::optim::Adam runs seven tensor operations per parameter (the two moments, the square root,
// the bias corrections, the update), each a pass over memory: 46-90 ms a step for the 22M
// parameters of the peers' decoder. This one reads the parameter, its gradient and both moments
// once and writes them back once. Same options, same state (exp_avg, exp_avg_sq, step) under the
// same keys, so checkpoints load into either; same arithmetic up to rounding (~1 ulp per step).
// Parameters the pass does not take (amsgrad, CUDA, other dtypes, non-contiguous memory, a CPU
// without AVX2 and FMA) make the whole step torch::optim::Adam's own.
#pragma once

#include <torch/optim/adam.h>

namespace saccade {

class FusedAdam : public torch::optim::Adam {
 public:
  using torch::optim::Adam::Adam;
  torch::Tensor step(LossClosure closure = nullptr) override;

 private:
  // Whether every parameter with a gradient is one the fused pass takes.
  bool fused_pass_takes_all();
};

// A parameter's state in an Adam optimizer (FusedAdam or torch::optim::Adam), or null before the
// parameter's first step.
torch::optim::AdamParamState* adam_state(torch::optim::Optimizer& optimizer, const torch::Tensor& parameter);

}  // namespace saccade
