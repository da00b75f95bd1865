// token_cross_entropy against torch's cross_entropy in double precision: values and gradients for
// each kernel the CPU runs, over vocabularies that take whole vectors and tails of scalars, rows
// whose logits spread over thousands, and targets out of range.
#include "kernels/cross_entropy.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <string>
#include <vector>

namespace saccade {
namespace {

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
