// token_cross_entropy against torch's cross_entropy in double precision: values and gradients for
// each kernel the CPU runs, over vocabularies that take whole vectors and tails of scalars, rows
// whose logits spread over thousands, and targets out of range; log_softmax_rows against
// log_softmax in double, forbidden (-inf) words included; argmax_rows against torch::max over ties,
// NaNs and rows with every word forbidden.
#include "kernels/cross_entropy.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>
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

TEST(LogSoftmaxRows, MatchesLogSoftmaxInDouble) {
  torch::manual_seed(1);
  std::vector<KernelIsa> isas = supported_kernel_isas();
  isas.push_back(KernelIsa::none);
  const float inf = std::numeric_limits<float>::infinity();
  for (const int64_t V : {1, 7, 37, 1000}) {
    for (const double spread : {1.0, 30.0, 3000.0}) {
      auto logits = torch::randn({6, V}) * spread;
      if (V > 3) {
        logits.select(1, 2).fill_(-inf);  // a word forbidden in every row
        logits[1].fill_(-inf);            // a row all forbidden but one word
        logits[1][V - 1] = 0.5f;
      }
      const auto reference = torch::log_softmax(logits.to(torch::kDouble), 1);
      for (const KernelIsa isa : isas) {
        const auto log_probs = log_softmax_rows(isa, logits);
        const std::string where =
            std::string(to_string(isa)) + " V=" + std::to_string(V) + " spread " + std::to_string(spread);
        ASSERT_EQ(log_probs.sizes(), logits.sizes()) << where;
        const auto finite = reference.isfinite();
        EXPECT_TRUE(torch::equal(log_probs.isfinite(), finite)) << where;
        EXPECT_TRUE((log_probs.masked_select(~finite) == -inf).all().item<bool>()) << where;
        EXPECT_LT(
            (log_probs.to(torch::kDouble) - reference).masked_select(finite).abs().max().item<double>(),
            1e-6 * (spread + 1))
            << where;
      }
    }
  }
}

TEST(ArgmaxRows, MatchesTorchMaxOverTiesNaNsAndForbiddenRows) {
  torch::manual_seed(2);
  std::vector<KernelIsa> isas = supported_kernel_isas();
  isas.push_back(KernelIsa::none);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (const int64_t V : {1, 7, 16, 37, 1000, 10000}) {
    // Scores from five values, so most rows tie at their largest in several lanes and positions.
    auto scores = torch::randint(5, {12, V}).to(torch::kFloat) - 4.0f;
    scores[0].fill_(-inf);  // every word forbidden
    scores[1].fill_(-inf);  // one word allowed, the last
    scores[1][V - 1] = -3.0f;
    scores[2][V / 2] = nan;  // a NaN ranks above every number
    scores[3][V - 1] = nan;  // in the tail or a lane's last vector
    scores[4].fill_(nan);
    scores[5][0] = nan;
    scores[5][V - 1] = 7.0f;
    scores[6][V - 1] = 7.0f;                          // the largest last
    scores[7].masked_fill_(scores[7] == 0.0f, -inf);  // forbidden words among the scores
    const auto expected = std::get<1>(scores.max(1));
    for (const KernelIsa isa : isas) {
      const auto words = argmax_rows(isa, scores);
      const std::string where = std::string(to_string(isa)) + " V=" + std::to_string(V);
      ASSERT_EQ(words.scalar_type(), torch::kLong) << where;
      EXPECT_TRUE(torch::equal(words, expected)) << where << "\n" << words << "\n" << expected;
    }
    // A strided view is read as torch reads it.
    const auto columns = scores.t().contiguous().t();
    for (const KernelIsa isa : isas)
      EXPECT_TRUE(torch::equal(argmax_rows(isa, columns), expected)) << to_string(isa) << " V=" << V;
  }
}

}  // namespace
}  // namespace saccade
