// The soft-attention objective against values worked out by hand.
#include "train/objectives.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

namespace saccade {
namespace {

// B=2 captions of 3 and 1 real steps, V=4 words, L=2 locations.
struct Example {
  torch::Tensor logits = torch::zeros({2, 3, 4});
  torch::Tensor targets = torch::tensor({{1, 2, 3}, {2, 0, 0}}, torch::kLong);
  torch::Tensor lengths = torch::tensor({3, 1}, torch::kLong);
  torch::Tensor alphas = torch::tensor(
      {{{1.0, 0.0}, {0.5, 0.5}, {0.0, 1.0}},      // caption 0: attended [1.5, 1.5]
       {{0.25, 0.75}, {1.0, 0.0}, {1.0, 0.0}}});  // caption 1: only t=0 is real: [0.25, 0.75]
};

TEST(SoftAttentionLoss, UniformLogitsGiveLogVPerWord) {
  Example example;
  // Every real word costs log 4; caption 0 has 3, caption 1 has 1: sum 4 log 4.
  const auto per_caption = soft_attention_loss(
      example.logits, example.targets, example.lengths, example.alphas, 0.0, XentReduction::per_caption);
  EXPECT_NEAR(per_caption.xent.item<double>(), 4 * std::log(4.0) / 2, 1e-6);
  EXPECT_EQ(per_caption.tokens, 4);
  const auto per_token = soft_attention_loss(
      example.logits, example.targets, example.lengths, example.alphas, 0.0, XentReduction::per_token);
  EXPECT_NEAR(per_token.xent.item<double>(), std::log(4.0), 1e-6);
  EXPECT_EQ(per_token.alpha_reg.item<double>(), 0.0);
}

TEST(SoftAttentionLoss, PaddingNeverCounts) {
  Example example;
  // Huge scores at padded steps for a wrong word would dominate if padding leaked in.
  example.logits[1][1][3] = 100.0;
  example.logits[1][2][3] = 100.0;
  const auto loss = soft_attention_loss(
      example.logits, example.targets, example.lengths, example.alphas, 0.0, XentReduction::per_caption);
  EXPECT_NEAR(loss.xent.item<double>(), 2 * std::log(4.0), 1e-6);
}

TEST(SoftAttentionLoss, NonUniformWordCost) {
  Example example;
  example.logits[0][0][1] = 2.0;  // the target word gets score 2, the others 0
  // -log(e^2 / (e^2 + 3)) = log(e^2 + 3) - 2 for that word; log 4 for the other three.
  const double expected = (std::log(std::exp(2.0) + 3.0) - 2.0 + 3 * std::log(4.0)) / 2;
  const auto loss = soft_attention_loss(
      example.logits, example.targets, example.lengths, example.alphas, 0.0, XentReduction::per_caption);
  EXPECT_NEAR(loss.xent.item<double>(), expected, 1e-6);
}

TEST(SoftAttentionLoss, DoublyStochasticRegularizer) {
  Example example;
  // Caption 0: (1 - 1.5)^2 + (1 - 1.5)^2 = 0.5. Caption 1: (1 - 0.25)^2 + (1 - 0.75)^2 = 0.625.
  // Mean over the batch 0.5625, times lambda 2 = 1.125.
  const auto loss = soft_attention_loss(
      example.logits, example.targets, example.lengths, example.alphas, 2.0, XentReduction::per_caption);
  EXPECT_NEAR(loss.alpha_reg.item<double>(), 1.125, 1e-6);
  EXPECT_NEAR(loss.total.item<double>(), 2 * std::log(4.0) + 1.125, 1e-6);
}

TEST(SoftAttentionLoss, MultiheadAlphasAreAveragedOverHeads) {
  Example example;
  // Two heads whose mean is the single-head example.
  const auto offset = torch::tensor({0.1, -0.1}).view({1, 1, 2});
  const auto heads = torch::stack({example.alphas + offset, example.alphas - offset}, 2);  // [B, T, 2, L]
  const auto loss = soft_attention_loss(
      example.logits, example.targets, example.lengths, heads, 2.0, XentReduction::per_caption);
  EXPECT_NEAR(loss.alpha_reg.item<double>(), 1.125, 1e-6);
}

TEST(SoftAttentionLoss, ParsesReductionNames) {
  EXPECT_EQ(parse_xent_reduction("per_token"), XentReduction::per_token);
  EXPECT_EQ(to_string(XentReduction::per_caption), "per_caption");
  EXPECT_THROW(parse_xent_reduction("mean"), std::invalid_argument);
}

}  // namespace
}  // namespace saccade
