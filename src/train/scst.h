// Self-critical sequence training (Rennie et al. 2017): fine-tuning a captioner on the reward its
// own sampled captions earn, CIDEr-D, instead of the likelihood of the references.
//
// For each image K captions w^k are sampled from the model (train.scst.samples), all images x
// samples in one decoder batch; each earns r_k = CIDEr-D(w^k, the image's references), with the
// document frequencies of the whole training split's references (CiderD, counted once) and <end>
// counted as a word in the candidate (when it was emitted) and in every reference, so a caption
// that stops on "a" or "with" matches no reference's final bigram (train.scst.count_end; off, the
// words alone are scored, as evaluation scores them). The loss is
//     -1/(B K) sum_k (r_k - b_k) log p(w^k | a)
// whose gradient is an unbiased estimate of -grad E_w[r(w)] for any baseline b_k that does not
// depend on w^k (Williams 1992). Baselines (train.scst.baseline), constants for the gradient:
//   greedy  the reward of the image's greedy caption (Rennie et al.: "self-critical")
//   mean    the mean reward of the image's other K - 1 samples (Luo 2020), no extra decode
//
// Hard attention. The locations s are sampled with the words, so a caption's probability is
// p(w | a) = sum_s p(s | a) p(w | s, a), and the gradient of the expected reward is
//     E_{s,w}[(r(w) - b) (grad log p(w | s, a) + grad log p(s | a))]:
// the two REINFORCE terms share ONE advantage, the caption's CIDEr-D against its baseline. The
// cross-entropy objective's location term (reward log p(y | s, a), train.hard.*) does not apply:
// SCST trains words and locations on the same reward. Every caption samples its locations (the
// paper's expectation captions exist to stabilize cross-entropy training).
//
// The samples are drawn in training mode (dropout active, hard attention sampling), in the same
// pass that differentiates them, so the gradient is of the distribution that was sampled.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "decode/search.h"
#include "eval/metrics.h"

namespace saccade {

enum class ScstBaseline { greedy, mean };
std::string to_string(ScstBaseline baseline);
ScstBaseline parse_scst_baseline(const std::string& name);  // greedy | mean

struct ScstOptions {
  int64_t samples = 5;  // K captions sampled per image
  ScstBaseline baseline = ScstBaseline::greedy;
  // Count <end> as a word of every caption in the reward (and its document frequencies); false
  // scores the words alone, as the evaluation does.
  bool count_end = true;
  // Words whose ending a caption is logged (the share of samples that stop on one).
  std::vector<std::string> function_words;
};

// K sampled captions per image, with the log-probabilities that make the gradient.
struct SampledCaptions {
  std::vector<std::vector<int64_t>> words;  // [R] word ids, without <end>
  std::vector<bool> finished;               // [R] <end> was drawn (else cut at max_length words)
  torch::Tensor log_prob;                   // [R] sum of log p(w_t | w_<t, a) over the words and <end>
  torch::Tensor location_log_prob;          // [R] hard attention: sum of log p(s_t | ...); else undefined
};

// One caption drawn for every row of annotations [R, L, D] (repeat an image's rows for several),
// with autograd, in the decoder's current mode. Words come from the model's distribution with
// the words forbid_words forbids at step t removed and the rest renormalized (no temperature or
// truncation); a caption stops at <end> or after `search.max_length` words. Draws from
// LibTorch's default generator.
SampledCaptions sample_captions(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& search);

// A caption as the reward reads it: its words, then "<end>" when it was finished and the reward
// counts it.
Tokens reward_tokens(const std::vector<std::string>& words, bool finished, bool count_end = true);

// Each sample's CIDEr-D against its image's references (image-major: image i's samples are rows
// [i K, (i + 1) K) for K = options.samples), <end> counted as options.count_end says, and the
// baselines options.baseline asks for (greedy: `greedy` holds each image's greedy caption).
// `words_of` turns word ids into words.
struct ScstRewards {
  std::vector<double> rewards;    // [R]
  std::vector<double> baselines;  // [R]
};
ScstRewards score_samples(
    const CiderD& cider,
    const SampledCaptions& sampled,
    const std::vector<DecodedCaption>& greedy,
    const std::vector<std::vector<Tokens>>& references,
    const ScstOptions& options,
    const std::function<Tokens(const std::vector<int64_t>&)>& words_of);

// Baselines for K rewards per image (rewards image-major: image i's samples at [i K, (i + 1) K)):
// `greedy` holds one reward per image (ScstBaseline::greedy), or is empty for the mean of the
// image's other samples. Throws std::invalid_argument for mismatched sizes or K < 2 with mean.
std::vector<double> scst_baselines(
    const std::vector<double>& rewards, int64_t samples, const std::vector<double>& greedy);

struct ScstTerms {
  torch::Tensor loss;     // [] -mean_r (reward_r - baseline_r) (log p(w_r) + log p(s_r))
  double reward = 0.0;    // mean reward of the samples
  double baseline = 0.0;  // mean baseline
};

// The loss whose gradient is the SCST estimate; rewards and baselines [R] are constants.
ScstTerms scst_terms(
    const SampledCaptions& samples, const std::vector<double>& rewards, const std::vector<double>& baselines);

// The share of captions whose last word is one of `function_words` (0 for none given).
double function_word_ending_share(
    const std::vector<std::vector<std::string>>& captions, const std::vector<std::string>& function_words);

}  // namespace saccade
