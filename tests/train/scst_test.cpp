// Self-critical training: its gradient against the exact gradient of the expected reward, worked
// out by enumerating every caption (and every attention path) of a tiny decoder.
#include "train/scst.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <functional>
#include <map>
#include <vector>

#include "decode/tiny_decoder.h"

namespace saccade {
namespace {

constexpr int64_t kStart = 1, kEnd = 2, kUnk = 3, kWord = 4;
const std::vector<int64_t> kEmittable = {kEnd, kUnk, kWord};  // all but <pad> and <start>
constexpr int64_t kLocations = 2;
constexpr int64_t kMaxWords = 2;

// A tiny decoder over 5 tokens with weights large enough to make its distributions uneven.
AttentionLSTMDecoder uneven_decoder(AttentionMode mode) {
  DecoderOptions options;
  options.vocab_size = 5;
  options.annotation_dim = 3;
  options.lstm.embed_dim = 4;
  options.lstm.hidden_dim = 5;
  options.lstm.attention_dim = 4;
  options.dropout = 0.0;
  options.attention_mode = mode;
  torch::manual_seed(11);
  AttentionLSTMDecoder decoder(options);
  torch::NoGradGuard no_grad;
  for (auto& parameter : decoder->parameters()) parameter.mul_(3.0);
  return decoder;
}

// An arbitrary reward of a caption: a table, not a formula the estimator could share.
double reward_of(const std::vector<int64_t>& words, bool finished) {
  static const std::map<std::vector<int64_t>, double> table = {
      {{}, 0.2},          {{kUnk}, 1.5},      {{kWord}, -0.7},     {{kUnk, kUnk}, 0.4},
      {{kUnk, kWord}, 2}, {{kWord, kUnk}, 1}, {{kWord, kWord}, -1}};
  return table.at(words) + (finished ? 0.25 : 0.0);
}

// The gradient of `loss` for each parameter, by name.
using Gradient = std::map<std::string, torch::Tensor>;

Gradient gradients(AttentionLSTMDecoderImpl& decoder, const torch::Tensor& loss) {
  decoder.zero_grad();
  loss.backward({}, /*retain_graph=*/true);  // hard attention's estimate backpropagates twice
  Gradient grads;
  for (const auto& item : decoder.named_parameters()) {
    const auto& grad = item.value().grad();
    grads[item.key()] = grad.defined() ? grad.clone() : torch::zeros_like(item.value());
  }
  return grads;
}

// log p(words, [<end>], locations) over the emittable tokens: for soft attention from one
// teacher-forced pass (another code path than the sampler's steps), for hard attention by feeding
// the path step by step with its locations.
torch::Tensor path_log_prob(
    AttentionLSTMDecoderImpl& decoder,
    const torch::Tensor& annotations,
    const std::vector<int64_t>& tokens,
    const std::vector<int64_t>& locations) {
  const auto emittable = torch::tensor(kEmittable);
  const auto position = [&](int64_t token) {
    return std::find(kEmittable.begin(), kEmittable.end(), token) - kEmittable.begin();
  };
  const int64_t steps = static_cast<int64_t>(tokens.size());
  auto total = torch::zeros({});
  if (locations.empty()) {
    std::vector<int64_t> inputs = {kStart};
    inputs.insert(inputs.end(), tokens.begin(), tokens.end() - 1);
    const auto logits =
        decoder.forward(annotations, torch::tensor(inputs).unsqueeze(0), torch::tensor({steps})).logits[0];
    for (int64_t t = 0; t < steps; ++t)
      total = total + torch::log_softmax(logits[t].index_select(0, emittable), 0)[position(tokens[t])];
    return total;
  }
  DecoderState state = decoder.init_state(annotations);
  auto previous = torch::tensor({kStart});
  for (int64_t t = 0; t < steps; ++t) {
    const DecoderStep step = decoder.step(state, previous, HardRead::argmax, torch::tensor({locations[t]}));
    total = total + torch::log_softmax(step.logits[0].index_select(0, emittable), 0)[position(tokens[t])] +
            step.alpha[0][locations[t]].log();
    previous = torch::tensor({tokens[t]});
    state = step.state;
  }
  return total;
}

// The exact expected reward sum_{w, s} p(w, s) r(w) over every caption of at most kMaxWords
// words (a caption cut at kMaxWords words has no <end>) and, for hard attention, every path.
torch::Tensor expected_reward(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations, bool hard) {
  std::vector<std::vector<int64_t>> captions = {{}};
  for (int64_t a : {kUnk, kWord}) {
    captions.push_back({a});
    for (int64_t b : {kUnk, kWord}) captions.push_back({a, b});
  }
  auto total = torch::zeros({});
  for (const auto& words : captions) {
    const bool finished = static_cast<int64_t>(words.size()) < kMaxWords;
    std::vector<int64_t> tokens = words;
    if (finished) tokens.push_back(kEnd);
    const int64_t steps = static_cast<int64_t>(tokens.size());
    const int64_t paths = hard ? static_cast<int64_t>(std::pow(kLocations, steps)) : 1;
    for (int64_t path = 0; path < paths; ++path) {
      std::vector<int64_t> locations;
      for (int64_t t = 0, code = path; hard && t < steps; ++t, code /= kLocations)
        locations.push_back(code % kLocations);
      total =
          total + path_log_prob(decoder, annotations, tokens, locations).exp() * reward_of(words, finished);
    }
  }
  return total;
}

// The relative error ||estimate - exact|| / ||exact|| over the parameters whose names start with
// `prefix`.
double relative_error(const Gradient& estimate, const Gradient& exact, const std::string& prefix = "") {
  double difference = 0.0, norm = 0.0;
  for (const auto& [name, value] : exact) {
    if (name.rfind(prefix, 0) != 0) continue;
    difference += (estimate.at(name) - value).pow(2).sum().item<double>();
    norm += value.pow(2).sum().item<double>();
  }
  return std::sqrt(difference / norm);
}

struct Estimate {
  Gradient gradient;    // of -(SCST's loss)
  Gradient words_only;  // the same without the locations' term (hard attention)
  double mean_reward = 0.0;
};

// The SCST gradient over `images` x `samples` captions of one image, with the given baseline.
Estimate scst_estimate(
    AttentionLSTMDecoderImpl& decoder,
    const torch::Tensor& annotations,
    int64_t images,
    int64_t samples,
    ScstBaseline baseline) {
  SearchOptions search;
  search.method = SearchMethod::sample;
  search.max_length = kMaxWords;
  const SampledCaptions sampled =
      sample_captions(decoder, annotations.expand({images * samples, -1, -1}), search);
  std::vector<double> rewards;
  for (size_t r = 0; r < sampled.words.size(); ++r)
    rewards.push_back(reward_of(sampled.words[r], sampled.finished[r]));
  // A greedy baseline is any constant per image; the mean baseline uses the other samples.
  const std::vector<double> greedy =
      baseline == ScstBaseline::greedy ? std::vector<double>(images, 0.6) : std::vector<double>();
  const auto baselines = scst_baselines(rewards, samples, greedy);
  Estimate estimate;
  const ScstTerms terms = scst_terms(sampled, rewards, baselines);
  estimate.mean_reward = terms.reward;
  estimate.gradient = gradients(decoder, -terms.loss);
  if (sampled.location_log_prob.defined()) {
    SampledCaptions words_only = sampled;
    words_only.location_log_prob = torch::Tensor();
    estimate.words_only = gradients(decoder, -scst_terms(words_only, rewards, baselines).loss);
  }
  return estimate;
}

class ScstGradient : public ::testing::TestWithParam<std::tuple<AttentionMode, ScstBaseline>> {};

TEST_P(ScstGradient, EqualsTheExactGradientOfTheExpectedReward) {
  const auto [mode, baseline] = GetParam();
  const bool hard = mode == AttentionMode::hard;
  auto decoder = uneven_decoder(mode);
  decoder->train();  // hard attention samples its locations in training mode
  torch::manual_seed(3);
  const auto annotations = torch::randn({1, kLocations, 3}) * 2.0;
  const auto expected = expected_reward(*decoder, annotations, hard);
  const auto exact = gradients(*decoder, expected);

  torch::manual_seed(5);
  const Estimate estimate = scst_estimate(*decoder, annotations, 20000, 4, baseline);
  EXPECT_NEAR(estimate.mean_reward, expected.item<double>(), 0.02);
  EXPECT_LT(relative_error(estimate.gradient, exact), 0.05);
  // The attention's own parameters, which the hard read reaches only through p(s | a).
  EXPECT_LT(relative_error(estimate.gradient, exact, "attention."), 0.1);
  if (hard) {
    // The locations' term is what trains them: the words' term alone gives them nothing.
    EXPECT_NEAR(relative_error(estimate.words_only, exact, "attention."), 1.0, 1e-6);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SoftAndHard,
    ScstGradient,
    ::testing::Combine(
        ::testing::Values(AttentionMode::soft, AttentionMode::hard),
        ::testing::Values(ScstBaseline::greedy, ScstBaseline::mean)));

TEST(ScstBaselines, MeanIsTheOtherSamplesMean) {
  const auto baselines = scst_baselines({1.0, 2.0, 6.0, 0.0, 0.0, 3.0}, 3, {});
  const std::vector<double> expected = {4.0, 3.5, 1.5, 1.5, 1.5, 0.0};
  ASSERT_EQ(baselines.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_DOUBLE_EQ(baselines[i], expected[i]) << i;
}

TEST(ScstBaselines, GreedyIsTheImagesGreedyReward) {
  EXPECT_EQ(
      scst_baselines({1.0, 2.0, 6.0, 0.0}, 2, {0.5, 0.25}), (std::vector<double>{0.5, 0.5, 0.25, 0.25}));
}

TEST(ScstBaselines, RefusesMismatchedSizes) {
  EXPECT_THROW(scst_baselines({1.0, 2.0, 3.0}, 2, {}), std::invalid_argument);
  EXPECT_THROW(scst_baselines({1.0, 2.0}, 2, {0.1, 0.2}), std::invalid_argument);
  EXPECT_THROW(scst_baselines({1.0, 2.0}, 1, {}), std::invalid_argument);
}

TEST(ScstTerms, LossWeighsEachCaptionsLogProbabilityByItsAdvantage) {
  SampledCaptions sampled;
  sampled.log_prob = torch::tensor({-1.0, -2.0}, torch::requires_grad());
  const ScstTerms terms = scst_terms(sampled, {3.0, 1.0}, {2.0, 2.0});
  // -((3 - 2)(-1) + (1 - 2)(-2)) / 2 = -0.5
  EXPECT_DOUBLE_EQ(terms.loss.item<double>(), -0.5);
  EXPECT_DOUBLE_EQ(terms.reward, 2.0);
  EXPECT_DOUBLE_EQ(terms.baseline, 2.0);
  terms.loss.backward();
  EXPECT_TRUE(torch::allclose(sampled.log_prob.grad(), torch::tensor({-0.5, 0.5})));
}

TEST(RewardTokens, EndCountsAsAWordOnlyWhenEmitted) {
  EXPECT_EQ(reward_tokens({"a", "dog"}, true), (Tokens{"a", "dog", "<end>"}));
  EXPECT_EQ(reward_tokens({"a", "dog"}, false), (Tokens{"a", "dog"}));
}

TEST(FunctionWordEndings, CountsCaptionsWhoseLastWordIsOne) {
  EXPECT_DOUBLE_EQ(
      function_word_ending_share({{"a", "dog", "with"}, {"a", "dog"}, {}, {"the"}}, {"with", "the"}), 0.5);
}

}  // namespace
}  // namespace saccade
