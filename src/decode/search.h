// Caption search: turning annotation grids into words with a trained decoder.
//
//   SearchOptions options = search_options_from(config);         // decode.* keys
//   std::unique_ptr<CaptionSearch> search = make_caption_search(options);   // greedy or beam
//   std::vector<DecodedCaption> captions = search->search(*decoder, annotations);
//   vocabulary.decode(captions[0].tokens)                         // words
//
// Shapes: B images, K beams, L locations, N heads (multihead attention and the Transformer), V vocabulary.
// Searches run under inference mode, in eval mode (the decoder's training flag is restored), and
// never change the decoder's parameters. Every caption carries its log-probability (the sum over
// its words and <end> when finished) and the attention map of each of its n words.
//
// Greedy search picks the most probable word at every step, for all B images at once, until every
// caption has emitted <end> or reached max_length. A caption that never emits <end> is returned as
// it stands (finished = false), never dropped.
//
// Beam search (the usual "keep K alive" search, as in OpenNMT/CTranslate2), per image:
//   - Scores are sums of word log-probabilities. At step t every live hypothesis is extended by
//     every word; the K best extensions over all K x V are kept. An extension by <end> becomes a
//     finished hypothesis (its slot dies this step); the others stay alive.
//   - The image is done when it holds K finished hypotheses, or after step max_length (the one
//     that may add <end> after max_length words). Extensions chosen at that last step that are
//     not <end> are dropped: those hypotheses stay unfinished at max_length words.
//   - The answer is the finished hypothesis with the best normalized score
//     log_prob / length^length_penalty (length = its words + 1 for <end>). When none finished,
//     it is the best unfinished one (finished = false, max_length words): never empty-handed.
// Sampling (decode.method=sample) draws every word from the model's distribution, for all B
// images at once, reshaped by a temperature T (p^(1/T), renormalized), then truncated to the
// top_k most probable words and to the smallest set whose probability reaches top_p (nucleus
// sampling; both applied in that order, each keeping at least the most probable word). Words come
// from LibTorch's default generator: `torch::manual_seed` makes a decode repeat. A caption's
// log_prob is the model's own (T = 1, no truncation), as greedy and beam search report it.
//
// All B x K hypotheses advance in ONE decoder batch of B*K rows: init_state runs once per image
// (so the attention keys are computed once per image) and index_select expands each image's
// state to its K beams once; after every step only h and c are reordered (a beam never leaves its
// image, so the expanded attention memory stays as it is). With beam_size 1, min_length 0 and
// block_unk off this is greedy search exactly (same tokens, log-probability and attention maps).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "data/vocabulary.h"
#include "models/decoder.h"

namespace saccade {

class Config;

// The score of a word or hypothesis that can no longer be chosen.
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// How each caption is searched: greedy (beam search of one hypothesis), beam (beam_size
// hypotheses), sample (each word drawn from the model's distribution).
enum class SearchMethod { greedy, beam, sample };
std::string to_string(SearchMethod method);
SearchMethod parse_search_method(const std::string& name);  // greedy | beam | sample

struct SearchOptions {
  SearchMethod method = SearchMethod::beam;
  // K: hypotheses kept alive per image; 1 = greedy. method=greedy uses 1 whatever this says.
  int64_t beam_size = 1;
  // Words per caption at most, <end> not counted.
  int64_t max_length = 20;
  // Words per caption at least: <end> is not allowed before this many words; 0 = no minimum.
  int64_t min_length = 0;
  // Exponent of the length normalization of finished hypotheses: score = log_prob / length^p
  // with length = words + 1. 0 = raw sum of log-probabilities (favours short captions);
  // 1 = mean log-probability per token.
  double length_penalty = 0.0;
  // Never emit <unk> (its probability is set to 0 before the choice).
  bool block_unk = false;
  // Hard-attention decoders: the context each step reads (soft decoders ignore it).
  HardRead hard_read = HardRead::argmax;
  // Captions kept per image, best first, beside the chosen one: at most beam_size (beam search);
  // 1 = the chosen caption alone.
  int64_t n_best = 1;
  // Diverse beam search (Vijayakumar et al. 2016): the beam_size hypotheses of an image form
  // beam_groups groups of equal size (1 = plain beam search). At each step the groups choose in
  // turn, each among its own hypotheses' extensions, with diversity_penalty subtracted from a
  // word's log-probability once for every hypothesis of an earlier group that chose it at this
  // step (Hamming diversity). Hypotheses keep their plain log-probabilities as scores.
  int64_t beam_groups = 1;
  double diversity_penalty = 0.5;
  // Never emit a word that would repeat a trigram of the caption.
  bool block_trigrams = false;
  // Words a caption may not end on (<end> is forbidden right after them), as vocabulary ids.
  std::vector<int64_t> bad_ending_ids;
  // method=sample: the temperature T > 0 (1 = the model's distribution, below 1 sharper), the
  // number of most probable words kept (0 = all), and the probability mass kept (1 = all).
  double temperature = 1.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  // The special tokens: the Vocabulary's, for every model saccade trains.
  int64_t start_id = Vocabulary::kStart;  // fed first
  int64_t end_id = Vocabulary::kEnd;      // finishes a caption
  int64_t unk_id = Vocabulary::kUnk;      // what block_unk forbids
  int64_t pad_id = Vocabulary::kPad;      // never emitted, as <start> is not
};

// Reads decode.{method, beam_size, beam_groups, diversity_penalty, max_length, min_length,
// length_penalty, block_unk, hard_read, block_trigrams, bad_endings, n_best, temperature, top_k,
// top_p}; the bad endings are looked up in
// `vocabulary` (words it lacks can never be emitted, and are left out). Throws ConfigError for a
// missing, ill-typed or unknown value.
SearchOptions search_options_from(const Config& config, const Vocabulary& vocabulary);

// Throws std::invalid_argument, one sentence per broken rule: beam_size >= 1, max_length >= 1,
// 0 <= min_length <= max_length, length_penalty >= 0 and finite, temperature >= 1e-4 and finite,
// top_k >= 0, 0 < top_p <= 1, beam_groups >= 1 dividing beam_size (beam search), diversity_penalty
// >= 0 and finite, 1 <= n_best <= the hypotheses kept (beam_size for beam search, 1
// for greedy search and sampling), token ids >= 0, start != end, unk distinct from start and end.
void validate(const SearchOptions& options);

// Whether greedy search gives what the options ask for: not sampling, one hypothesis (beam_size 1
// or method greedy), n_best 1, min_length 0, block_unk off (the length penalty does not matter with one
// hypothesis; trigram blocking and bad endings apply to greedy search as to the others).
bool greedy_suffices(const SearchOptions& options);

// Sets the log-probabilities [rows, V] of the words step t may not emit to -inf: <start> and
// <pad> always, <unk> under block_unk, <end> before min_length words.
void forbid_words(torch::Tensor& log_probs, int64_t t, const SearchOptions& options);

// The least log-probability keep_an_exit gives <end>: finite after the smallest temperature
// divides it (sampling) and after any caption's steps are summed (beam scores), where the lowest
// float became -inf and left the row with no word to take.
constexpr float kStuckEndFloor = -1e30f;

// Re-allows <end> in the rows [rows, V] where every word is forbidden (a tiny vocabulary under
// trigram blocking and a minimum length), at the model's log-probability `end_log_probs` [rows]
// taken before the words were forbidden (kStuckEndFloor where that is lower, -inf included, so
// the row keeps a word to take): a caption may always stop, and its log-probability stays the
// model's.
void keep_an_exit(torch::Tensor& log_probs, const torch::Tensor& end_log_probs, const SearchOptions& options);

// Beam search's choice at one step: the K best extensions of each image [B, K] (their scores, and
// indices into the image's K*V extensions, best first), each slot's score [B, K] plus each word's
// log-probability [B*K, V]. With beam_groups G > 1 (diverse beam search), group g of K/G slots
// picks its K/G among its own slots' extensions, a word penalized by diversity_penalty for each
// earlier group's slot that picked it this step; the scores returned are the plain ones. On the
// CPU one pass over the log-probabilities finds them; it gives topk's answer, and hands ties and
// NaN to topk, whose order among equal sums the searches keep.
std::tuple<torch::Tensor, torch::Tensor> best_extensions(
    const torch::Tensor& scores, const torch::Tensor& log_probs, const SearchOptions& options);

struct DecodedCaption {
  std::vector<int64_t> tokens;  // the words' ids, without <start> and <end>
  double log_prob = 0.0;        // sum of the log-probabilities of the emitted words and <end>
  bool finished = false;        // <end> was emitted before max_length
  torch::Tensor alphas;         // CPU float [n, L] ([n, N, L] with heads): where each of the n words looked
  // With decode.n_best > 1: the image's best n_best captions, best first (the first is this one).
  std::vector<DecodedCaption> n_best;
};

// Greedy search over annotations [B, L, D]. Throws std::invalid_argument unless greedy_suffices.
std::vector<DecodedCaption> greedy_search(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options);

// One sampled caption per row of annotations [B, L, D] (repeat rows for several per image).
std::vector<DecodedCaption> sample_search(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options);

// Beam search over annotations [B, L, D] for all B images at once.
std::vector<DecodedCaption> beam_search(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options);

// Puts a module in eval mode for a scope and restores its training flag on the way out, also
// when the scope is left by an exception.
class EvalModeGuard {
 public:
  explicit EvalModeGuard(torch::nn::Module& module) : module_(module), was_training_(module.is_training()) {
    module_.eval();
  }
  ~EvalModeGuard() { module_.train(was_training_); }
  EvalModeGuard(const EvalModeGuard&) = delete;
  EvalModeGuard& operator=(const EvalModeGuard&) = delete;

 private:
  torch::nn::Module& module_;
  bool was_training_;
};

// A caption search: annotations [B, L, D] -> one caption per image, by greedy_search,
// beam_search or sample_search (`kind`) with `options`.
class CaptionSearch {
 public:
  CaptionSearch(SearchMethod kind, const SearchOptions& options);  // validates
  std::vector<DecodedCaption> search(CaptionDecoderImpl& decoder, const torch::Tensor& annotations) const;
  // "greedy", "beam K" (with "G groups, diversity P" for diverse beams), or "sample" with the
  // non-default temperature, top_k and top_p.
  std::string describe() const;
  const SearchOptions& options() const { return options_; }

 private:
  SearchMethod kind_;
  SearchOptions options_;
};

// The one place that chooses: sampling for method sample, greedy search when greedy_suffices,
// beam search otherwise (of one hypothesis for method greedy). Validates.
std::unique_ptr<CaptionSearch> make_caption_search(const SearchOptions& options);

}  // namespace saccade
