// Beam search, and the CaptionSearch interface that puts it beside greedy search.
//
//   BeamOptions options = beam_options_from(config);   // decode.* keys
//   validate(options);
//   std::vector<DecodedCaption> captions = beam_search(*decoder, annotations, options);
//   // or, behind the interface (greedy when it gives the same answer, see make_caption_search):
//   std::unique_ptr<CaptionSearch> search = make_caption_search(options);
//   captions = search->search(*decoder, annotations);
//
// Shapes: B images, K beams, L locations, N heads (multihead attention only), V vocabulary.
// All B x K hypotheses advance in ONE decoder batch of B*K rows: init_state runs once per image
// (so the attention keys are computed once per image) and index_select expands each image's
// state to its K beams once; after every step only h and c are reordered (a beam never leaves its
// image, so the expanded attention memory stays as it is).
//
// The search, per image (the usual "keep K alive" beam search, as in OpenNMT/CTranslate2):
//   - Scores are sums of word log-probabilities. At step t every live hypothesis is extended by
//     every word; the K best extensions over all K x V are kept. An extension by <end> becomes a
//     finished hypothesis (its slot dies this step); the others stay alive.
//   - The image is done when it holds K finished hypotheses, or after step max_length (the one
//     that may add <end> after max_length words). Extensions chosen at that last step that are
//     not <end> are dropped: those hypotheses stay unfinished at max_length words.
//   - The answer is the finished hypothesis with the best normalized score
//     log_prob / length^length_penalty (length = its words + 1 for <end>). When none finished,
//     it is the best unfinished one (finished = false, max_length words): never empty-handed.
// With beam_size 1, min_length 0 and block_unk off this is greedy_search exactly (same tokens,
// same log-probability, same attention maps).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "decode/search.h"
#include "models/decoder.h"

namespace saccade {

class Config;

struct BeamOptions {
  // K: hypotheses kept alive per image; 1 = greedy.
  int64_t beam_size = 3;
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
  int64_t start_id = 1;                   // the <start> token fed first (Vocabulary::kStart)
  int64_t end_id = 2;                     // the token that finishes a caption (Vocabulary::kEnd)
  int64_t unk_id = 3;                     // the token block_unk forbids (Vocabulary::kUnk)
  HardRead hard_read = HardRead::argmax;  // hard-attention decoders: the context each step reads
};

// Reads decode.{beam_size, max_length, min_length, length_penalty, block_unk, hard_read}; the
// token ids keep their defaults (the Vocabulary's). Throws ConfigError for a missing or ill-typed key.
BeamOptions beam_options_from(const Config& config);

// Throws std::invalid_argument, one sentence per broken rule: beam_size >= 1, max_length >= 1,
// 0 <= min_length <= max_length, length_penalty >= 0 and finite, token ids >= 0, start != end,
// unk distinct from start and end.
void validate(const BeamOptions& options);

// Beam search over annotations [B, L, D] for all B images at once (see the top of this file).
// Runs under inference mode, in eval mode (the decoder's training flag is restored). Every
// caption carries its log-probability (sum over its words and <end> when finished) and the
// attention map of each of its n words, alphas [n, L] ([n, N, L] multihead).
std::vector<DecodedCaption> beam_search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations, const BeamOptions& options);

// A caption search strategy: annotations [B, L, D] -> one caption per image.
class CaptionSearch {
 public:
  virtual ~CaptionSearch() = default;
  virtual std::vector<DecodedCaption> search(
      AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations) const = 0;
  // "greedy" or "beam K", for logs and printouts.
  virtual std::string describe() const = 0;
};

class GreedySearch : public CaptionSearch {
 public:
  explicit GreedySearch(const SearchOptions& options);
  std::vector<DecodedCaption> search(
      AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations) const override;
  std::string describe() const override { return "greedy"; }

 private:
  SearchOptions options_;
};

class BeamSearch : public CaptionSearch {
 public:
  explicit BeamSearch(const BeamOptions& options);  // validates
  std::vector<DecodedCaption> search(
      AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations) const override;
  std::string describe() const override { return "beam " + std::to_string(options_.beam_size); }

 private:
  BeamOptions options_;
};

// GreedySearch when the options ask for nothing greedy cannot do (beam_size 1, min_length 0,
// block_unk off; the length penalty does not matter with one hypothesis), BeamSearch otherwise.
// Validates the options.
std::unique_ptr<CaptionSearch> make_caption_search(const BeamOptions& options);

// The greedy search's share of `options`: lengths, special tokens, hard-attention read.
SearchOptions greedy_options_of(const BeamOptions& options);

}  // namespace saccade
