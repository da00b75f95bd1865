// Training objectives of Show, Attend and Tell.
//
// Soft attention (paper Sec. 4.2.1, eq. 14): the caption's negative log-likelihood plus the
// doubly stochastic regularization
//     lambda * sum_i (1 - sum_t alpha_ti)^2
// which pushes the model to attend to every location over the course of the caption.
// Hard attention (Sec. 4.1, eq. 10-12): the locations s are sampled, and the gradient of the
// variational bound L_s = sum_s p(s | a) log p(y | s, a) is estimated from N samples per caption
// (HardAttentionOptions::samples; each a row of the batch), averaging
//     d log p(y | s~, a) + lambda_r (log p(y | s~, a) - b) d log p(s~ | a) + lambda_e d H[s~]
// with b a moving average of the reward log p(y | s~, a) (or, at the authors' code's scale, of its
// mean per word: HardReward; HardReward::to_go credits each location only with its word and those
// after it, which it can change, a lower-variance estimate of the same gradient), or the same
// caption's log-likelihood read with the expected context (HardBaseline::expectation), or the mean of
// the caption's other location samples (HardBaseline::mean, N >= 2 samples). The first term is the
// cross-entropy's gradient (the context of the sampled locations); hard_attention_terms() gives the two
// others as a surrogate loss whose gradient they are. Captions that read the expected context (the paper does
// so for half of them) add no REINFORCE term, as their context is soft.
// Shapes: B batch, T steps, V vocab, L locations (multihead alphas [B, T, heads, L] are
// averaged over heads first for the regularizer).
#pragma once

#include <torch/types.h>

#include <optional>
#include <string>

namespace saccade {

// How the per-word negative log-likelihoods become one number.
enum class XentReduction {
  per_caption,  // sum over a caption's words, mean over the batch (the authors' code)
  per_token,    // mean over all real words in the batch (sgrvinod's tutorial)
};

XentReduction parse_xent_reduction(const std::string& name);
std::string to_string(XentReduction reduction);

struct SoftAttentionLoss {
  torch::Tensor total;      // [] xent + alpha_reg, what is minimized
  torch::Tensor xent;       // [] cross-entropy over real tokens
  torch::Tensor word_nll;   // [B, T] -log p(y_t | y_<t, a) of each real word; 0 past lengths[b]
  torch::Tensor alpha_reg;  // [] lambda * mean_b sum_i (1 - sum_t alpha_bti)^2
  int64_t tokens = 0;       // real (non-padding) target tokens in the batch
};

// logits  [B, T, V] scores for the word at each step
// targets [B, T]    int64 word ids; positions t >= lengths[b] are padding and never count
// lengths [B]       int64 number of real target steps per caption (including <end>)
// alphas  [B, T, L] or [B, T, heads, L] attention weights per step; padded steps are ignored
// alpha_reg_weight  lambda; 0 disables the regularizer
SoftAttentionLoss soft_attention_loss(
    const torch::Tensor& logits,
    const torch::Tensor& targets,
    const torch::Tensor& lengths,
    const torch::Tensor& alphas,
    double alpha_reg_weight,
    XentReduction reduction);

// The reward R of a caption whose locations were sampled.
enum class HardReward {
  per_word,     // log p(y | s~, a) / words: the scale of the authors' code (mean cost per step)
  per_caption,  // log p(y | s~, a): eq. 12 as the paper writes it
  // per_word's scale, location s_t credited with sum_{t' >= t} log p(y_t') / words against
  // b (words - t) / words: s_t cannot change the words before it, so dropping them keeps the
  // estimate unbiased and removes their noise (Williams 1992's reward-to-go)
  to_go,
};
HardReward parse_hard_reward(const std::string& name);
std::string to_string(HardReward reward);

// What a sampled caption's reward is measured against.
enum class HardBaseline {
  moving_average,  // b, a moving average of the sampled captions' mean reward (the authors' code)
  // the same caption reading the expected context, word by word: R and its credit are computed
  // from log p(y_t | s~, a) - log p(y_t | E[s], a), and b is 0. The trainer decodes every caption
  // both ways (Rennie et al. 2017's self-critical baseline, with the expectation as the test-time
  // reading's stand-in).
  expectation,
  // the mean of the same caption's other samples (train.hard.samples >= 2), word by word: each
  // caption is decoded with that many independently sampled sets of locations, and a sample's
  // words are measured against the others' (Kool et al. 2019's leave-one-out baseline; b is 0).
  mean,
};
HardBaseline parse_hard_baseline(const std::string& name);
std::string to_string(HardBaseline baseline);

struct HardAttentionOptions {
  HardReward reward = HardReward::per_word;
  HardBaseline baseline = HardBaseline::moving_average;  // the trainer's choice of what it passes
  double reinforce_weight = 0.1;  // lambda_r (the authors' code divides the reward by 10)
  double entropy_weight = 0.002;  // lambda_e (the authors' code)
  double baseline_decay = 0.9;    // b_k = decay * b_{k-1} + (1 - decay) * mean log p(y | s~, a)
  // The first soft_epochs epochs every caption reads the expected context and nothing is sampled
  // (soft attention's training), so REINFORCE starts from an attention that already spreads
  // over the objects a word depends on.
  int64_t soft_epochs = 0;
  // N, the location samples drawn per caption (eq. 11's Monte Carlo average over N samples): the
  // trainer decodes every caption N times and the terms average over all N B of them.
  int64_t samples = 1;
};

struct HardAttentionTerms {
  torch::Tensor loss;            // [] reinforce - lambda_e * entropy: add it to what is minimized
  torch::Tensor reinforce;       // [] -lambda_r mean_b (R_b - b) log p(s~_b | a) over sampled captions
                                 //    (to_go: -lambda_r mean_b sum_t A_bt log p(s~_bt | a))
  torch::Tensor entropy;         // [] mean_b sum_t H[alpha_bt] over real steps (and heads)
  std::optional<double> reward;  // the sampled captions' mean reward R (to_go: per word, b's scale);
                                 // none if none was sampled
  int64_t sampled_captions = 0;  // how many captions R averages
};

// word_log_likelihood [B, T] log p(y_t | y_<t, s~, a), 0 past lengths[b]: the reward's source (a
// constant for the gradient)
// alphas  [B, T, L] or [B, T, heads, L]; weights: the same shape, one-hot where sampled
// expectation_rows [B] bool or undefined; lengths [B]; baseline b (nullopt: the batch's own mean
// reward, for the first step).
// baseline_word_log_likelihood [B, T], given with HardBaseline::expectation or mean: each row's
// baseline word by word (the same caption reading the expected context, or its other samples'
// mean), in place of b.
HardAttentionTerms hard_attention_terms(
    const torch::Tensor& word_log_likelihood,
    const torch::Tensor& alphas,
    const torch::Tensor& weights,
    const torch::Tensor& expectation_rows,
    const torch::Tensor& lengths,
    std::optional<double> baseline,
    const HardAttentionOptions& options,
    const torch::Tensor& baseline_word_log_likelihood = {});

// word_log_likelihood [N B, T]: N samples of the same B captions, sample n in rows [n B, (n+1) B).
// Each row's mean over the other N - 1 samples of its caption: HardBaseline::mean's baseline.
torch::Tensor mean_of_other_samples(const torch::Tensor& word_log_likelihood, int64_t samples);

// [B, T] float mask, 1 where t < lengths[b].
torch::Tensor step_mask(const torch::Tensor& lengths, int64_t steps);

}  // namespace saccade
