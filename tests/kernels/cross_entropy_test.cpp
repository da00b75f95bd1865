// token_cross_entropy against torch's cross_entropy in double precision: values and gradients for
// each kernel the CPU runs, over vocabularies that take whole vectors and tails of scalars, rows
// whose logits spread over thousands, and targets out of range; and the vector exponential
// against std::exp over the whole float range.
#include "kernels/cross_entropy.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

TEST(ExpLanes, MatchesStdExpOverTheFloatRange) {
  // Every 1/64 from -100 to 100, eight lanes at a time.
  for (double start = -100.0; start < 100.0; start += 8.0 / 64) {
    Lanes<float, 8> x;
    for (int i = 0; i < 8; ++i) x[i] = static_cast<float>(start + i / 64.0);
    const auto y = exp_lanes(x);
    for (int i = 0; i < 8; ++i) {
      const double expected = std::exp(static_cast<double>(x[i]));
      if (x[i] < -87.3365447505f) {
        EXPECT_EQ(y[i], 0.0f) << x[i];
      } else if (x[i] > 88.3762626647949f) {
        EXPECT_EQ(y[i], std::numeric_limits<float>::infinity()) << x[i];
      } else {
        EXPECT_LT(std::abs(y[i] - expected) / expected, 2.5e-7) << x[i];
      }
    }
  }
  const Lanes<float, 1> nan = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_TRUE(std::isnan(exp_lanes(nan)[0]));
}

TEST(TokenCrossEntropy, MatchesCrossEntropyWithGradients) {
  torch::manual_seed(0);
  std::vector<KernelIsa> isas = supported_kernel_isas();
  isas.push_back(KernelIsa::none);
  for (const int64_t V : {1, 7, 37, 1000}) {
    for (const double spread : {1.0, 30.0, 3000.0}) {
      const int64_t N = 5;
      auto logits = (torch::randn({N, V}) * spread).requires_grad_();
      const auto targets = torch::randint(V, {N}, torch::kLong);
      const auto weights = torch::randn({N});  // a random linear loss over the rows
      const auto reference_logits = logits.detach().to(torch::kDouble).requires_grad_();
      const auto reference = torch::nn::functional::cross_entropy(
          reference_logits, targets,
          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
      const auto reference_grad =
          torch::autograd::grad({(reference * weights.to(torch::kDouble)).sum()}, {reference_logits})[0];
      for (const KernelIsa isa : isas) {
        const auto nll = token_cross_entropy(isa, logits, targets);
        ASSERT_EQ(nll.sizes(), torch::IntArrayRef({N}));
        const auto grad = torch::autograd::grad({(nll * weights).sum()}, {logits})[0];
        const std::string where =
            std::string(to_string(isa)) + " V=" + std::to_string(V) + " spread " + std::to_string(spread);
        // The log-sum-exp is of the order of the spread; float keeps ~1e-7 of it.
        EXPECT_LT((nll.to(torch::kDouble) - reference).abs().max().item<double>(), 1e-6 * (spread + 1))
            << where;
        EXPECT_LT((grad.to(torch::kDouble) - reference_grad).abs().max().item<double>(), 1e-6) << where;
      }
    }
  }
}

TEST(TokenCrossEntropy, RefusesATargetOutOfRange) {
  const auto logits = torch::randn({2, 5});
  for (const int64_t bad : {-1, 5}) {
    const auto targets = torch::tensor(std::vector<int64_t>{0, bad}, torch::kLong);
    for (const KernelIsa isa : supported_kernel_isas())
      EXPECT_THROW(token_cross_entropy(isa, logits, targets), c10::Error) << bad;
  }
}

}  // namespace
}  // namespace saccade
