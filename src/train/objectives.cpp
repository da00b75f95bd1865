// Soft-attention objective: masked cross-entropy + doubly stochastic regularization.
#include "train/objectives.h"

#include <limits>
#include <stdexcept>

#include "base/enum_names.h"
#include "kernels/cross_entropy.h"

namespace saccade {

const EnumNames<XentReduction> kXentReductionNames(
    "cross-entropy reduction",
    {{XentReduction::per_caption, "per_caption"}, {XentReduction::per_token, "per_token"}});
const EnumNames<HardReward> kHardRewardNames(
    "hard-attention reward",
    {{HardReward::per_word, "per_word"},
     {HardReward::per_caption, "per_caption"},
     {HardReward::to_go, "to_go"}});

const EnumNames<HardBaseline> kHardBaselineNames(
    "hard-attention baseline",
    {{HardBaseline::moving_average, "moving_average"},
     {HardBaseline::expectation, "expectation"},
     {HardBaseline::mean, "mean"}});

XentReduction parse_xent_reduction(const std::string& name) {
  return kXentReductionNames.parse(name);
}

std::string to_string(XentReduction reduction) {
  return kXentReductionNames.name(reduction);
}

HardReward parse_hard_reward(const std::string& name) {
  return kHardRewardNames.parse(name);
}

std::string to_string(HardReward reward) {
  return kHardRewardNames.name(reward);
}

HardBaseline parse_hard_baseline(const std::string& name) {
  return kHardBaselineNames.parse(name);
}

std::string to_string(HardBaseline baseline) {
  return kHardBaselineNames.name(baseline);
}

namespace {

// The objective is computed in float or double whatever precision the forward pass ran in
// (autocast's bf16 or fp16 logits and attention).
torch::Tensor at_least_float(const torch::Tensor& t) {
  return t.scalar_type() == torch::kHalf || t.scalar_type() == torch::kBFloat16 ? t.to(torch::kFloat) : t;
}

}  // namespace

torch::Tensor step_mask(const torch::Tensor& lengths, int64_t steps) {
  const auto positions = torch::arange(steps, lengths.options()).unsqueeze(0);  // [1, T]
  return (positions < lengths.unsqueeze(1)).to(torch::kFloat);                  // [B, T]
}

SoftAttentionLoss soft_attention_loss(
    const torch::Tensor& forward_logits,
    const torch::Tensor& targets,
    const torch::Tensor& lengths,
    const torch::Tensor& forward_alphas,
    double alpha_reg_weight,
    XentReduction reduction) {
  TORCH_CHECK(forward_logits.dim() == 3, "logits must be [B, T, V]");
  const auto logits = at_least_float(forward_logits), alphas = at_least_float(forward_alphas);
  const int64_t batch = logits.size(0);
  const int64_t steps = logits.size(1);
  const auto mask = step_mask(lengths, steps).to(logits.dtype());  // [B, T]

  // Padding targets may hold any id; they are masked out after the per-element loss.
  const auto nll = token_cross_entropy(logits.reshape({batch * steps, -1}), targets.reshape({batch * steps}))
                       .view({batch, steps});  // [B, T]
  const auto masked = nll * mask;              // [B, T]

  SoftAttentionLoss loss;
  loss.word_nll = masked;  // [B, T]
  loss.tokens = lengths.sum().item<int64_t>();
  if (reduction == XentReduction::per_caption) {
    loss.xent = masked.sum() / static_cast<double>(batch);
  } else {
    loss.xent = masked.sum() / static_cast<double>(std::max<int64_t>(1, loss.tokens));
  }

  if (alpha_reg_weight > 0) {
    const auto per_step = alphas.dim() == 4 ? alphas.mean(2) : alphas;  // [B, T, L]
    const auto attended = (per_step * mask.unsqueeze(2)).sum(1);        // [B, L] sum_t alpha_ti
    const auto shortfall = (1.0 - attended).pow(2).sum(1);              // [B]
    loss.alpha_reg = alpha_reg_weight * shortfall.mean();
  } else {
    loss.alpha_reg = torch::zeros({}, logits.options());
  }
  loss.total = loss.xent + loss.alpha_reg;
  return loss;
}

namespace {

// [B, T] to_go's advantage of each location s_bt, (sum_{t' >= t} log p(y_bt') - b (words - t)) /
// words, 0 past lengths[b]; b on the per-word scale.
torch::Tensor to_go_advantages(const torch::Tensor& word_rewards, const torch::Tensor& lengths, double b) {
  const auto words = lengths.to(torch::kDouble).clamp_min(1).unsqueeze(1);                     // [B, 1]
  const auto mask = step_mask(lengths, word_rewards.size(1)).to(torch::kDouble);               // [B, T]
  const auto to_go = word_rewards.flip(1).cumsum(1).flip(1);                                   // [B, T]
  const auto left = words - torch::arange(word_rewards.size(1), mask.options()).unsqueeze(0);  // [B, T]
  return (to_go - b * left) / words * mask;
}

}  // namespace

torch::Tensor mean_of_other_samples(const torch::Tensor& word_log_likelihood, int64_t samples) {
  TORCH_CHECK(
      samples >= 2 && word_log_likelihood.size(0) % samples == 0,
      "the mean of the other samples needs N >= 2 ", "samples of the same captions, got ",
      word_log_likelihood.size(0), " rows for N = ", samples);
  const auto by_sample = word_log_likelihood.reshape({samples, -1});  // [N, B T]
  const auto others = (by_sample.sum(0, /*keepdim=*/true) - by_sample) / static_cast<double>(samples - 1);
  return others.reshape(word_log_likelihood.sizes());
}

HardAttentionTerms hard_attention_terms(
    const torch::Tensor& word_log_likelihood,
    const torch::Tensor& forward_alphas,
    const torch::Tensor& forward_weights,
    const torch::Tensor& expectation_rows,
    const torch::Tensor& lengths,
    std::optional<double> baseline,
    const HardAttentionOptions& options,
    const torch::Tensor& baseline_word_log_likelihood) {
  TORCH_CHECK(
      forward_alphas.sizes() == forward_weights.sizes(), "alphas and weights must have the same shape");
  const auto alphas = at_least_float(forward_alphas), weights = at_least_float(forward_weights);
  const int64_t batch = alphas.size(0), steps = alphas.size(1);
  auto mask = step_mask(lengths, steps).to(alphas.dtype());  // [B, T]
  for (int64_t d = 2; d < alphas.dim(); ++d) mask = mask.unsqueeze(-1);
  // 0 log 0 = 0 at masked locations; a sampled location always has alpha > 0.
  const auto log_alpha = alphas.clamp_min(std::numeric_limits<float>::min()).log();
  const auto masked_sum = [&](const torch::Tensor& x) { return (x * mask).reshape({batch, -1}).sum(1); };

  HardAttentionTerms terms;
  terms.entropy = -masked_sum(alphas * log_alpha).mean();  // H[alpha] summed over steps
  const auto sampled = expectation_rows.defined()
                           ? expectation_rows.logical_not()
                           : torch::ones({batch}, alphas.options().dtype(torch::kBool));
  const auto caption_reward = [&](const torch::Tensor& word_rewards) {  // [B, T] -> [B] R
    const auto sum = word_rewards.sum(1).to(torch::kDouble);
    return options.reward == HardReward::per_caption ? sum : sum / lengths.to(torch::kDouble).clamp_min(1);
  };
  const auto word_rewards = word_log_likelihood.detach();
  const auto reward = caption_reward(word_rewards);  // [B]
  // What the locations are credited with before b: the reward, or with a baseline caption its
  // excess over that caption's, b being 0 then.
  const bool paired = baseline_word_log_likelihood.defined();
  const auto credited_words = paired ? word_rewards - baseline_word_log_likelihood.detach() : word_rewards;
  const auto credited_reward = paired ? caption_reward(credited_words) : reward;  // [B]
  const int64_t samples = sampled.sum().item<int64_t>();
  terms.sampled_captions = samples;
  if (samples > 0) {
    terms.reward = reward.masked_select(sampled).mean().item<double>();
    const double b = paired ? 0.0 : baseline.value_or(*terms.reward);
    const auto rows = sampled.to(torch::kDouble);
    torch::Tensor credited;  // [] sum_b sum_t A_bt log p(s~_bt | a)
    if (options.reward == HardReward::to_go) {
      auto advantage = (to_go_advantages(credited_words.to(torch::kDouble), lengths, b) * rows.unsqueeze(1))
                           .to(alphas.dtype());                                        // [B, T]
      for (int64_t d = 2; d < alphas.dim(); ++d) advantage = advantage.unsqueeze(-1);  // [B, T, (N,) 1]
      credited = (advantage * weights.detach() * log_alpha).sum();
    } else {
      const auto log_p_locations = masked_sum(weights.detach() * log_alpha);  // [B] log p(s~ | a)
      credited = (((credited_reward - b) * rows).to(alphas.dtype()) * log_p_locations).sum();
    }
    terms.reinforce = -options.reinforce_weight * credited / static_cast<double>(batch);
  } else {
    terms.reinforce = torch::zeros({}, alphas.options());
  }
  terms.loss = terms.reinforce - options.entropy_weight * terms.entropy;
  return terms;
}

}  // namespace saccade
