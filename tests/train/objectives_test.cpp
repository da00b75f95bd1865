// The soft-attention objective against values worked out by hand; the hard-attention terms
// against the exact gradient of an expectation and a hand-worked entropy.
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
  // Each real word's cost, 0 past the caption's end.
  const auto word_cost = torch::tensor(
      {{std::log(std::exp(2.0) + 3.0) - 2.0, std::log(4.0), std::log(4.0)}, {std::log(4.0), 0.0, 0.0}},
      torch::kFloat);
  EXPECT_TRUE(torch::allclose(loss.word_nll, word_cost, 1e-6, 1e-6)) << loss.word_nll;
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

// One step over L=3 locations for B captions whose locations are sampled from softmax(logits).
struct Sampled {
  torch::Tensor logits;   // [3] requires grad
  torch::Tensor alphas;   // [B, 1, 3]
  torch::Tensor weights;  // [B, 1, 3] one-hot
  torch::Tensor chosen;   // [B]
};

Sampled sample_locations(int64_t batch) {
  Sampled s;
  s.logits = torch::tensor({0.3, -0.5, 0.9}, torch::requires_grad());
  s.alphas = torch::softmax(s.logits, 0).expand({batch, 1, 3});
  s.chosen = torch::multinomial(torch::softmax(s.logits, 0).detach(), batch, true);  // [B]
  s.weights = torch::one_hot(s.chosen, 3).to(torch::kFloat).view({batch, 1, 3});
  return s;
}

// How far the REINFORCE estimate of the loss's gradient in the logits, with each sample's reward
// `rewards` measured against `baseline_words` (none: the moving average b = 0.7), lies from the
// exact gradient of -E[reward_of(s)]: the largest difference over the three locations.
double reinforce_gradient_error(
    const Sampled& sampled,
    const torch::Tensor& rewards,
    const torch::Tensor& reward_of,
    const torch::Tensor& baseline_words) {
  const int64_t rows = rewards.size(0);
  const auto alpha = torch::softmax(sampled.logits, 0).detach();
  const auto exact = -(alpha * (reward_of - (alpha * reward_of).sum()));
  HardAttentionOptions options;
  options.reinforce_weight = 1.0;
  options.entropy_weight = 0.0;
  sampled.logits.mutable_grad() = torch::Tensor();
  const auto alphas = torch::softmax(sampled.logits, 0).expand({rows, 1, 3});
  hard_attention_terms(
      rewards, alphas, sampled.weights, {}, torch::ones({rows}, torch::kLong), 0.7, options, baseline_words)
      .loss.backward();
  return (sampled.logits.grad() - exact).abs().max().item<double>();
}

TEST(HardAttentionTerms, ReinforceGradientEstimatesTheExpectedRewardsGradient) {
  torch::manual_seed(0);
  const int64_t batch = 200000;
  const auto sampled = sample_locations(batch);
  // Reward f(s) per location; the estimator is unbiased for any baseline.
  const auto reward_of = torch::tensor({1.0, -2.0, 0.5});
  const auto rewards = reward_of.index_select(0, sampled.chosen).unsqueeze(1);  // [B, 1]: one word
  HardAttentionOptions options;
  options.reinforce_weight = 1.0;
  options.entropy_weight = 0.0;
  const auto terms = hard_attention_terms(
      rewards, sampled.alphas, sampled.weights, {}, torch::ones({batch}, torch::kLong), 0.7, options);
  terms.loss.backward();
  // d/de_j sum_s alpha_s f_s = alpha_j (f_j - sum_s alpha_s f_s); the loss is its negative.
  const auto alpha = torch::softmax(sampled.logits, 0).detach();
  const auto exact = -(alpha * (reward_of - (alpha * reward_of).sum()));
  EXPECT_TRUE(torch::allclose(sampled.logits.grad(), exact, 0.0, 0.015))
      << sampled.logits.grad() << "\nexpected\n"
      << exact;
  ASSERT_TRUE(terms.reward.has_value());
  EXPECT_NEAR(*terms.reward, (alpha * reward_of).sum().item<double>(), 0.01);
}

TEST(HardAttentionTerms, PerWordRewardDividesByTheCaptionsLength) {
  torch::manual_seed(2);
  const auto sampled = sample_locations(2);
  const auto alphas = sampled.alphas.expand({2, 4, 3}), weights = sampled.weights.expand({2, 4, 3});
  // log p(y | s, a) of -4 over 2 words and -8 over 4 words: -2 per word for both.
  const auto log_likelihood = torch::tensor({{-1.0, -3.0, 0.0, 0.0}, {-2.0, -2.0, -1.0, -3.0}});
  const auto lengths = torch::tensor({2, 4}, torch::kLong);
  HardAttentionOptions options;
  options.reward = HardReward::per_word;
  const auto per_word =
      hard_attention_terms(log_likelihood, alphas, weights, {}, lengths, std::nullopt, options);
  EXPECT_DOUBLE_EQ(*per_word.reward, -2.0);
  EXPECT_EQ(per_word.reinforce.item<double>(), 0.0);  // equal rewards, baseline = their mean
  options.reward = HardReward::per_caption;
  const auto per_caption =
      hard_attention_terms(log_likelihood, alphas, weights, {}, lengths, std::nullopt, options);
  EXPECT_DOUBLE_EQ(*per_caption.reward, -6.0);
  EXPECT_NE(per_caption.reinforce.item<double>(), 0.0);
  EXPECT_EQ(parse_hard_reward("per_caption"), HardReward::per_caption);
  EXPECT_THROW(parse_hard_reward("per_token"), std::invalid_argument);
}

// Caption 0 sampled locations 0, 1, 1 (alpha 0.5, 0.75, 0.2) for words of log p -1, -2, -3, then a
// padded step; caption 1, 2 real words, read the expected context. L=2 locations.
struct TwoSampledCaptions {
  torch::Tensor alphas = torch::tensor(
      {{{0.5, 0.5}, {0.25, 0.75}, {0.8, 0.2}, {0.5, 0.5}}, {{0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}, {0.5, 0.5}}},
      torch::kFloat);
  torch::Tensor weights = torch::tensor(
      {{{1.0, 0.0}, {0.0, 1.0}, {0.0, 1.0}, {1.0, 0.0}}, {{1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}, {1.0, 0.0}}});
  torch::Tensor log_likelihood = torch::tensor({{-1.0, -2.0, -3.0, 0.0}, {-5.0, -5.0, 0.0, 0.0}});
  torch::Tensor lengths = torch::tensor({3, 2}, torch::kLong);
  torch::Tensor expectation_rows = torch::tensor({false, true});
};

TEST(HardAttentionTerms, ToGoCreditsEachLocationWithItsWordAndThoseAfter) {
  // Caption 0: words of log p -1, -2, -3 and a padded step; b = -1.5 per word. The rewards to go
  // are -6, -5, -3 against b times the words left, -4.5, -3, -1.5: advantages -1.5, -2, -1.5,
  // over 3 words. Caption 1 read the expectation: it adds nothing, but counts in the batch of 2.
  const TwoSampledCaptions captions;
  HardAttentionOptions options;
  options.reward = HardReward::to_go;
  options.reinforce_weight = 1.0;
  options.entropy_weight = 0.0;
  const auto terms = hard_attention_terms(
      captions.log_likelihood, captions.alphas, captions.weights, captions.expectation_rows, captions.lengths,
      -1.5, options);
  const double credited = -1.5 / 3 * std::log(0.5) - 2.0 / 3 * std::log(0.75) - 1.5 / 3 * std::log(0.2);
  EXPECT_NEAR(terms.reinforce.item<double>(), -credited / 2, 1e-6);
  EXPECT_DOUBLE_EQ(*terms.reward, -2.0);  // per word, b's scale
  EXPECT_EQ(terms.sampled_captions, 1);
  EXPECT_EQ(to_string(HardReward::to_go), "to_go");
}

TEST(HardAttentionTerms, ToGoEstimatesTheExpectedRewardsGradient) {
  // Two steps over L=3: word 0's log p depends on s_0, word 1's on s_0 and s_1. The estimate is of
  // d E[(f(s_0) + g(s_0, s_1)) / 2], worked exactly from the two softmaxes.
  torch::manual_seed(4);
  const int64_t batch = 200000;
  const auto first = torch::tensor({0.3, -0.5, 0.9}, torch::requires_grad());
  const auto second = torch::tensor({-0.2, 0.6, 0.1}, torch::requires_grad());
  const auto alphas =
      torch::stack({torch::softmax(first, 0), torch::softmax(second, 0)}).unsqueeze(0).expand({batch, 2, 3});
  const auto a0 = torch::softmax(first, 0).detach(), a1 = torch::softmax(second, 0).detach();
  const auto s0 = torch::multinomial(a0, batch, true), s1 = torch::multinomial(a1, batch, true);  // [B]
  const auto f = torch::tensor({1.0, -2.0, 0.5});
  const auto g = torch::tensor({{0.5, -1.0, 2.0}, {-1.5, 0.0, 1.0}, {1.0, 1.0, -2.0}});
  const auto word_log_likelihood = torch::stack({f.index_select(0, s0), g.index({s0, s1})}, 1);  // [B, 2]
  const auto weights = torch::stack({torch::one_hot(s0, 3), torch::one_hot(s1, 3)}, 1).to(torch::kFloat);
  HardAttentionOptions options;
  options.reward = HardReward::to_go;
  options.reinforce_weight = 1.0;
  options.entropy_weight = 0.0;
  hard_attention_terms(
      word_log_likelihood, alphas, weights, {}, torch::full({batch}, 2, torch::kLong), 0.3, options)
      .loss.backward();
  const auto expected_after_first = f + torch::mv(g, a1);   // [3] E[reward | s_0 = j] times 2
  const auto expected_given_second = torch::mv(g.t(), a0);  // [3] E[g | s_1 = k]
  const auto exact_first = -(a0 * (expected_after_first - (a0 * expected_after_first).sum())) / 2;
  const auto exact_second = -(a1 * (expected_given_second - (a1 * expected_given_second).sum())) / 2;
  EXPECT_TRUE(torch::allclose(first.grad(), exact_first, 0.0, 0.015)) << first.grad() << "\nexpected\n"
                                                                      << exact_first;
  EXPECT_TRUE(torch::allclose(second.grad(), exact_second, 0.0, 0.015)) << second.grad() << "\nexpected\n"
                                                                        << exact_second;
}

TEST(HardAttentionTerms, ExpectationBaselineCreditsTheExcessOverTheSameCaption) {
  // Caption 0 as in the test above, log p -1, -2, -3; read with the expected context, the same
  // words had -1.5, -1, -2.5: excesses 0.5, -1, -0.5. The moving baseline (100) plays no part.
  const TwoSampledCaptions captions;
  const auto expected_context = torch::tensor({{-1.5, -1.0, -2.5, 0.0}, {-7.0, -1.0, 0.0, 0.0}});
  HardAttentionOptions options;
  options.reinforce_weight = 1.0;
  options.entropy_weight = 0.0;
  const auto reinforce = [&](HardReward reward) {
    options.reward = reward;
    const auto terms = hard_attention_terms(
        captions.log_likelihood, captions.alphas, captions.weights, captions.expectation_rows,
        captions.lengths, 100.0, options, expected_context);
    EXPECT_DOUBLE_EQ(*terms.reward, reward == HardReward::per_caption ? -6.0 : -2.0);  // the reward itself
    return terms.reinforce.item<double>();
  };
  const double log_p_locations = std::log(0.5) + std::log(0.75) + std::log(0.2);
  // Excesses to go -1, -1.5, -0.5 over 3 words; per word -1/3 in all; per caption -1. Batch of 2.
  const double to_go = -1.0 / 3 * std::log(0.5) - 1.5 / 3 * std::log(0.75) - 0.5 / 3 * std::log(0.2);
  EXPECT_NEAR(reinforce(HardReward::to_go), -to_go / 2, 1e-6);
  EXPECT_NEAR(reinforce(HardReward::per_word), 1.0 / 3 * log_p_locations / 2, 1e-6);
  EXPECT_NEAR(reinforce(HardReward::per_caption), 1.0 * log_p_locations / 2, 1e-6);
  EXPECT_EQ(parse_hard_baseline("expectation"), HardBaseline::expectation);
  EXPECT_EQ(to_string(HardBaseline::moving_average), "moving_average");
  EXPECT_THROW(parse_hard_baseline("greedy"), std::invalid_argument);
}

TEST(HardAttentionTerms, ExpectationBaselineRemovesTheCaptionsOwnNoise) {
  // R = f(s) + n_b, n_b ~ N(0, 10^2) a caption's difficulty that the same caption read with the
  // expected context shares. Against it the estimate stays unbiased and is far closer to the exact
  // gradient than against a constant b.
  torch::manual_seed(5);
  const int64_t batch = 200000;
  const auto sampled = sample_locations(batch);
  const auto reward_of = torch::tensor({1.0, -2.0, 0.5});
  const auto difficulty = 10.0 * torch::randn({batch, 1});
  const auto rewards = reward_of.index_select(0, sampled.chosen).unsqueeze(1) + difficulty;  // [B, 1]
  const double paired = reinforce_gradient_error(sampled, rewards, reward_of, difficulty);
  EXPECT_LT(paired, 0.005);
  EXPECT_GT(reinforce_gradient_error(sampled, rewards, reward_of, {}), 2 * paired);
}

TEST(HardAttentionTerms, MeanBaselineIsTheMeanOfTheSameCaptionsOtherSamples) {
  // N = 3 samples of B = 2 captions, one word each: caption 0 had 1, 4, 7, caption 1 had 2, 8, 14.
  const auto words = torch::tensor({{1.0}, {2.0}, {4.0}, {8.0}, {7.0}, {14.0}});
  const auto expected = torch::tensor({{5.5}, {11.0}, {4.0}, {8.0}, {2.5}, {5.0}});
  EXPECT_TRUE(torch::allclose(mean_of_other_samples(words, 3), expected)) << mean_of_other_samples(words, 3);
  EXPECT_THROW(mean_of_other_samples(words, 1), c10::Error);  // no other sample to average
  EXPECT_THROW(mean_of_other_samples(words, 4), c10::Error);  // 6 rows are not 4 samples of a batch
  EXPECT_EQ(parse_hard_baseline("mean"), HardBaseline::mean);
}

TEST(HardAttentionTerms, MeanOfOtherSamplesRemovesTheCaptionsOwnNoise) {
  // N = 4 samples of each caption, R = f(s) + n_c with n_c ~ N(0, 10^2) a caption's difficulty
  // that its samples share. Against the mean of its other samples the estimate stays unbiased and
  // is far closer to the exact gradient than against a constant b.
  torch::manual_seed(6);
  const int64_t samples = 4, captions = 50000, rows = samples * captions;
  const auto sampled = sample_locations(rows);
  const auto reward_of = torch::tensor({1.0, -2.0, 0.5});
  const auto difficulty =
      (10.0 * torch::randn({1, captions, 1})).expand({samples, captions, 1}).reshape({rows, 1});
  const auto rewards = reward_of.index_select(0, sampled.chosen).unsqueeze(1) + difficulty;  // [N B, 1]
  const double others =
      reinforce_gradient_error(sampled, rewards, reward_of, mean_of_other_samples(rewards, samples));
  EXPECT_LT(others, 0.01);
  EXPECT_GT(reinforce_gradient_error(sampled, rewards, reward_of, {}), 2 * others);
}

TEST(HardAttentionTerms, EntropyCountsRealStepsOnly) {
  // Caption 0: one real step with alpha (1/2, 1/4, 1/4): H = 1.5 ln 2; its padded step is ignored.
  const auto alphas = torch::tensor({{{0.5, 0.25, 0.25}, {1.0 / 3, 1.0 / 3, 1.0 / 3}}}, torch::kFloat);
  const auto terms = hard_attention_terms(
      torch::zeros({1, 2}), alphas, alphas, torch::tensor({true}), torch::tensor({1}, torch::kLong), 0.0, {});
  EXPECT_NEAR(terms.entropy.item<double>(), 1.5 * std::log(2.0), 1e-6);
  EXPECT_NEAR(terms.loss.item<double>(), -0.002 * 1.5 * std::log(2.0), 1e-8);
}

TEST(HardAttentionTerms, ExpectationCaptionsAndAConstantRewardAddNothing) {
  torch::manual_seed(1);
  const auto sampled = sample_locations(8);
  const auto lengths = torch::ones({8}, torch::kLong);
  // Every caption read the expectation: no REINFORCE term, no reward for the baseline.
  const auto all_expected = hard_attention_terms(
      torch::randn({8, 1}), sampled.alphas, sampled.alphas, torch::ones({8}, torch::kBool), lengths, 0.0, {});
  EXPECT_EQ(all_expected.reinforce.item<double>(), 0.0);
  EXPECT_FALSE(all_expected.reward.has_value());
  // No baseline yet: the batch's mean reward is used, so equal rewards have zero advantage.
  const auto first_step = hard_attention_terms(
      torch::full({8, 1}, -3.0), sampled.alphas, sampled.weights, {}, lengths, std::nullopt, {});
  EXPECT_EQ(first_step.reinforce.item<double>(), 0.0);
  EXPECT_DOUBLE_EQ(*first_step.reward, -3.0);
}

}  // namespace
}  // namespace saccade
