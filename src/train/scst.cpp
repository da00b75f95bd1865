// Self-critical sequence training: sampling with gradients, baselines, the loss (see scst.h).
#include "train/scst.h"

#include <torch/nn/functional/activation.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "base/enum_names.h"

namespace saccade {

const EnumNames<ScstBaseline> kScstBaselineNames(
    "SCST baseline", {{ScstBaseline::greedy, "greedy"}, {ScstBaseline::mean, "mean"}});

std::string to_string(ScstBaseline baseline) {
  return kScstBaselineNames.name(baseline);
}

ScstBaseline parse_scst_baseline(const std::string& name) {
  return kScstBaselineNames.parse(name);
}

SampledCaptions sample_captions(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& search) {
  const int64_t rows = annotations.size(0);
  const auto float_options = annotations.options().dtype(torch::kFloat);
  SampledCaptions samples;
  samples.words.resize(rows);
  samples.finished.assign(rows, false);
  samples.log_prob = torch::zeros({rows}, float_options);
  DecoderState state = decoder.init_state(annotations);
  auto previous = torch::full({rows}, search.start_id, annotations.options().dtype(torch::kLong));
  auto alive = torch::ones({rows}, float_options);  // 1 until the row draws <end>
  std::vector<bool> alive_rows(rows, true);
  for (int64_t t = 0; t < search.max_length; ++t) {
    DecoderStep step = decoder.step(state, previous);
    auto scores = step.logits.to(torch::kFloat).clone();  // [R, V]
    forbid_words(scores, t, search);
    const auto log_probs = torch::log_softmax(scores, 1);                                 // [R, V]
    const auto drawn = torch::multinomial(log_probs.detach().exp(), 1);                   // [R, 1]
    samples.log_prob = samples.log_prob + log_probs.gather(1, drawn).squeeze(1) * alive;  // [R]
    if (step.weights.defined()) {
      // log p(s_t): the log of alpha at the location read (0 log 0 = 0 elsewhere).
      const auto log_alpha = step.alpha.to(torch::kFloat).clamp_min(std::numeric_limits<float>::min()).log();
      const auto chosen = (step.weights.detach().to(torch::kFloat) * log_alpha).reshape({rows, -1}).sum(1);
      samples.location_log_prob =
          (samples.location_log_prob.defined() ? samples.location_log_prob : torch::zeros_like(chosen)) +
          chosen * alive;
    }
    const auto words = drawn.squeeze(1).cpu();
    const auto* word = words.data_ptr<int64_t>();
    bool any_alive = false;
    for (int64_t r = 0; r < rows; ++r) {
      if (!alive_rows[r]) continue;
      if (word[r] == search.end_id) {
        alive_rows[r] = false;
        samples.finished[r] = true;
      } else {
        samples.words[r].push_back(word[r]);
        any_alive = true;
      }
    }
    if (!any_alive) break;
    alive = alive * (drawn.squeeze(1) != search.end_id).to(torch::kFloat);
    previous = drawn.squeeze(1);
    state = step.state;
  }
  return samples;
}

Tokens reward_tokens(const std::vector<std::string>& words, bool finished, bool count_end) {
  Tokens tokens = words;
  if (finished && count_end) tokens.push_back("<end>");
  return tokens;
}

ScstRewards score_samples(
    const CiderD& cider,
    const SampledCaptions& sampled,
    const std::vector<DecodedCaption>& greedy,
    const std::vector<std::vector<Tokens>>& references,
    const ScstOptions& options,
    const std::function<Tokens(const std::vector<int64_t>&)>& words_of) {
  const int64_t samples = options.samples;
  const bool count_end = options.count_end;
  ScstRewards scored;
  std::vector<double> greedy_rewards;
  for (size_t image = 0; image < references.size(); ++image) {
    std::vector<Tokens> image_references, candidates;
    for (const auto& reference : references[image])
      image_references.push_back(reward_tokens(reference, true, count_end));
    for (int64_t k = 0; k < samples; ++k) {
      const size_t row = image * samples + k;
      candidates.push_back(
          reward_tokens(words_of(sampled.words.at(row)), sampled.finished.at(row), count_end));
    }
    if (!greedy.empty())
      candidates.push_back(
          reward_tokens(words_of(greedy.at(image).tokens), greedy.at(image).finished, count_end));
    auto scores = cider.score(candidates, image_references);
    if (!greedy.empty()) {
      greedy_rewards.push_back(scores.back());
      scores.pop_back();
    }
    scored.rewards.insert(scored.rewards.end(), scores.begin(), scores.end());
  }
  scored.baselines = scst_baselines(scored.rewards, samples, greedy_rewards);
  return scored;
}

std::vector<double> scst_baselines(
    const std::vector<double>& rewards, int64_t samples, const std::vector<double>& greedy) {
  const int64_t rows = static_cast<int64_t>(rewards.size());
  if (samples < 1 || rows % samples != 0) {
    throw std::invalid_argument(
        std::to_string(rows) + " rewards are not a whole number of images of " + std::to_string(samples) +
        " samples");
  }
  const int64_t images = rows / samples;
  if (!greedy.empty() && static_cast<int64_t>(greedy.size()) != images) {
    throw std::invalid_argument(
        std::to_string(greedy.size()) + " greedy rewards for " + std::to_string(images) + " images");
  }
  if (greedy.empty() && samples < 2)
    throw std::invalid_argument("the mean baseline needs at least 2 samples per image");
  std::vector<double> baselines(rows);
  for (int64_t image = 0; image < images; ++image) {
    double sum = 0.0;
    for (int64_t k = 0; k < samples; ++k) sum += rewards[image * samples + k];
    for (int64_t k = 0; k < samples; ++k) {
      const int64_t row = image * samples + k;
      baselines[row] =
          greedy.empty() ? (sum - rewards[row]) / static_cast<double>(samples - 1) : greedy[image];
    }
  }
  return baselines;
}

ScstTerms scst_terms(
    const SampledCaptions& samples,
    const std::vector<double>& rewards,
    const std::vector<double>& baselines) {
  const int64_t rows = samples.log_prob.size(0);
  if (static_cast<int64_t>(rewards.size()) != rows || static_cast<int64_t>(baselines.size()) != rows) {
    throw std::invalid_argument(
        "SCST needs one reward and one baseline per sample: " + std::to_string(rows) + " samples, " +
        std::to_string(rewards.size()) + " rewards, " + std::to_string(baselines.size()) + " baselines");
  }
  std::vector<float> advantages(rows);
  ScstTerms terms;
  for (int64_t r = 0; r < rows; ++r) {
    advantages[r] = static_cast<float>(rewards[r] - baselines[r]);
    terms.reward += rewards[r] / static_cast<double>(rows);
    terms.baseline += baselines[r] / static_cast<double>(rows);
  }
  const auto advantage = torch::tensor(advantages).to(samples.log_prob.device());  // [R]
  auto log_prob = samples.log_prob;
  if (samples.location_log_prob.defined()) log_prob = log_prob + samples.location_log_prob;
  terms.loss = -(advantage * log_prob).mean();
  return terms;
}

double function_word_ending_share(
    const std::vector<std::vector<std::string>>& captions, const std::vector<std::string>& function_words) {
  if (captions.empty()) return 0.0;
  int64_t endings = 0;
  for (const auto& caption : captions) {
    if (!caption.empty() &&
        std::find(function_words.begin(), function_words.end(), caption.back()) != function_words.end())
      ++endings;
  }
  return static_cast<double>(endings) / static_cast<double>(captions.size());
}

}  // namespace saccade
