// TimeSharedWeight against plain autograd: same values, same gradients for x_t and W.
#include "kernels/time_shared.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace saccade {
namespace {

// Three steps with a shrinking row count (x0's rows, again, then half), the way the decoder uses
// it; the outputs feed a random linear loss. Returns the loss.
torch::Tensor run_steps(
    const std::function<torch::Tensor(const torch::Tensor&)>& multiply, const torch::Tensor& x0) {
  torch::manual_seed(1);
  auto x = x0;
  torch::Tensor loss = torch::zeros({}, x0.options());
  const int64_t rows = x0.size(0);
  for (int64_t n : {rows, rows, rows / 2}) {
    const auto y = multiply(x.narrow(0, 0, n));  // [n, 5]
    loss = loss + (y * torch::randn(y.sizes(), y.options())).sum();
    x = torch::tanh(y.narrow(1, 0, 3));  // the next step's input depends on this one's output
  }
  return loss;
}

// run_steps through TimeSharedWeight against plain products: the loss and the gradients of W and
// x0 agree within `tolerance`.
void expect_plain_autograd(const torch::Tensor& weight, const torch::Tensor& x0, double tolerance) {
  const auto plain = run_steps([&](const torch::Tensor& x) { return torch::mm(x, weight); }, x0);
  const auto plain_grads = torch::autograd::grad({plain}, {weight, x0});

  TimeSharedWeight shared(weight);
  const auto deferred = run_steps([&](const torch::Tensor& x) { return shared.multiply(x); }, x0);
  const auto deferred_grads = torch::autograd::grad({deferred}, {weight, x0});

  EXPECT_NEAR(deferred.item<double>(), plain.item<double>(), 10 * tolerance);
  EXPECT_LT((deferred_grads[0] - plain_grads[0]).abs().max().item<double>(), tolerance);
  EXPECT_LT((deferred_grads[1] - plain_grads[1]).abs().max().item<double>(), tolerance);
}

TEST(TimeSharedWeight, MatchesPlainAutograd) {
  torch::manual_seed(0);
  expect_plain_autograd(
      torch::randn({3, 5}, torch::kDouble).requires_grad_(),
      torch::randn({4, 3}, torch::kDouble).requires_grad_(), 1e-12);
}

TEST(TimeSharedWeight, ManyRowsOfFloatsMatchPlainAutograd) {
  // 40 and 20 rows take the packed AVX-512 products where the CPU has them, forward and backward.
  torch::manual_seed(0);
  expect_plain_autograd(torch::randn({3, 5}).requires_grad_(), torch::randn({40, 3}).requires_grad_(), 1e-4);
}

TEST(TimeSharedWeight, StepsTheLossIgnoresGetNoGradient) {
  const auto weight = torch::ones({2, 2}).requires_grad_();
  const auto x = torch::ones({1, 2}).requires_grad_();
  TimeSharedWeight shared(weight);
  const auto used = shared.multiply(x);
  shared.multiply(2 * x);  // not part of the loss
  used.sum().backward();
  EXPECT_TRUE(torch::equal(weight.grad(), torch::ones({2, 2})));  // x^T [1, 1] from the used step only
  EXPECT_TRUE(torch::equal(x.grad(), torch::full({1, 2}, 2.0f)));
}

TEST(TimeSharedWeight, WithoutGradientsItIsAPlainProduct) {
  const auto weight = torch::randn({3, 5});
  const auto x = torch::randn({2, 3});
  TimeSharedWeight shared(weight);
  const auto y = shared.multiply(x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_TRUE(torch::allclose(y, torch::mm(x, weight)));
}

}  // namespace
}  // namespace saccade
