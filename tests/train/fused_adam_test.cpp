// FusedAdam against torch::optim::Adam: the same parameters and moments after several steps
// (tails of odd sizes, several threads' ranges, weight decay, two groups, a parameter without a
// gradient), the same state keys and step counts, the parameters' version counters moved as
// Adam's in-place updates move them, and Adam's own step where the fused pass does not apply.
#include "train/fused_adam.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

#include "kernels/kernel_isa.h"

namespace saccade {
namespace {

// Parameters of odd sizes (vector tails) and one large enough to be split over threads.
std::vector<torch::Tensor> make_parameters(torch::ScalarType dtype = torch::kFloat) {
  torch::manual_seed(0);
  std::vector<torch::Tensor> parameters;
  for (const int64_t size : {1, 7, 1000, 70001})
    parameters.push_back(torch::randn({size}, dtype).requires_grad_());
  parameters.push_back(torch::randn({33, 65}, dtype).requires_grad_());
  return parameters;
}

std::vector<torch::Tensor> copies(const std::vector<torch::Tensor>& parameters) {
  std::vector<torch::Tensor> copied;
  for (const auto& parameter : parameters) copied.push_back(parameter.detach().clone().requires_grad_());
  return copied;
}

// Two groups (the second with its own rate); the last parameter never gets a gradient.
template <typename Optimizer>
Optimizer make_optimizer(const std::vector<torch::Tensor>& p, const torch::optim::AdamOptions& options) {
  auto second = options;
  second.lr(options.lr() * 0.5);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(
      std::vector<torch::Tensor>{p[0], p[1], p[2]}, std::make_unique<torch::optim::AdamOptions>(options));
  groups.emplace_back(
      std::vector<torch::Tensor>{p[3], p[4]}, std::make_unique<torch::optim::AdamOptions>(second));
  return Optimizer(groups, options);
}

// The same random gradients for both sets of parameters, all but the last.
void set_gradients(const std::vector<torch::Tensor>& a, const std::vector<torch::Tensor>& b, int step) {
  torch::manual_seed(100 + step);
  for (size_t i = 0; i + 1 < a.size(); ++i) {
    const auto grad = torch::randn(a[i].sizes(), a[i].options()) * static_cast<double>(i + 1);
    a[i].mutable_grad() = grad.clone();
    b[i].mutable_grad() = grad.clone();
  }
}

double max_difference(const torch::Tensor& a, const torch::Tensor& b) {
  return (a.to(torch::kDouble) - b.to(torch::kDouble)).abs().max().item<double>();
}

// `steps` steps of both optimizers, each on the same gradients.
void step_both(
    FusedAdam& fused,
    torch::optim::Adam& plain,
    const std::vector<torch::Tensor>& fused_parameters,
    const std::vector<torch::Tensor>& plain_parameters,
    int steps) {
  for (int step = 0; step < steps; ++step) {
    set_gradients(fused_parameters, plain_parameters, step);
    fused.step();
    plain.step();
  }
}

TEST(FusedAdam, MatchesAdamStepByStep) {
  if (best_kernel_isa() == KernelIsa::none) GTEST_SKIP() << "this CPU has no AVX2 and FMA";
  for (const double weight_decay : {0.0, 0.1}) {
    const auto fused_parameters = make_parameters(), plain_parameters = copies(fused_parameters);
    const auto options = torch::optim::AdamOptions(1e-2).weight_decay(weight_decay);
    auto fused = make_optimizer<FusedAdam>(fused_parameters, options);
    auto plain = make_optimizer<torch::optim::Adam>(plain_parameters, options);
    step_both(fused, plain, fused_parameters, plain_parameters, 6);
    ASSERT_EQ(fused.state().size(), plain.state().size());
    for (size_t i = 0; i < fused_parameters.size(); ++i) {
      const auto& p = fused_parameters[i];
      // Six steps moved each parameter by ~6e-2; rounding differs by a few float ulps.
      EXPECT_LT(max_difference(p, plain_parameters[i]), 2e-6) << "parameter " << i << " wd " << weight_decay;
      if (i + 1 == fused_parameters.size()) {
        EXPECT_EQ(adam_state(fused, p), nullptr);  // no gradient, no state, as Adam
        EXPECT_TRUE(torch::equal(p, plain_parameters[i]));
        continue;
      }
      ASSERT_NE(adam_state(fused, p), nullptr);
      // Each step changed the parameter in place as far as autograd and cached copies can tell.
      EXPECT_EQ(p._version(), plain_parameters[i]._version()) << "parameter " << i;
      EXPECT_GE(p._version(), 6u) << "parameter " << i;
      const auto& state = *adam_state(fused, p);
      const auto& plain_state = *adam_state(plain, plain_parameters[i]);
      EXPECT_EQ(state.step(), 6);
      EXPECT_LT(max_difference(state.exp_avg(), plain_state.exp_avg()), 1e-6);
      EXPECT_LT(max_difference(state.exp_avg_sq(), plain_state.exp_avg_sq()), 1e-5);
    }
  }
}

TEST(FusedAdam, LeavesWhatItDoesNotTakeToAdam) {
  // amsgrad and double parameters: Adam's own step, to the bit.
  for (const bool amsgrad : {true, false}) {
    const auto dtype = amsgrad ? torch::kFloat : torch::kDouble;
    const auto fused_parameters = make_parameters(dtype), plain_parameters = copies(fused_parameters);
    const auto options = torch::optim::AdamOptions(1e-2).amsgrad(amsgrad);
    auto fused = make_optimizer<FusedAdam>(fused_parameters, options);
    auto plain = make_optimizer<torch::optim::Adam>(plain_parameters, options);
    step_both(fused, plain, fused_parameters, plain_parameters, 3);
    for (size_t i = 0; i < fused_parameters.size(); ++i)
      EXPECT_TRUE(torch::equal(fused_parameters[i], plain_parameters[i])) << i << " amsgrad " << amsgrad;
  }
}

}  // namespace
}  // namespace saccade
