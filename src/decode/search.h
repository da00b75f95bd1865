// Caption search: turning annotation grids into words with a trained decoder.
//
//   SearchOptions options{.max_length = 20};
//   std::vector<DecodedCaption> captions = greedy_search(*decoder, annotations, options);
//   vocabulary.decode(captions[0].tokens)  // words
//
// Shapes: B images, L locations, N heads (multihead attention only). Searches run under
// inference mode and never change the decoder's parameters.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

#include "models/decoder.h"

namespace saccade {

struct SearchOptions {
  int64_t max_length = 20;                // words per caption at most, <end> not counted
  int64_t start_id = 1;                   // the <start> token fed first (Vocabulary::kStart)
  int64_t end_id = 2;                     // the token that finishes a caption (Vocabulary::kEnd)
  HardRead hard_read = HardRead::argmax;  // hard-attention decoders: the context each step reads
};

// Throws std::invalid_argument: max_length >= 1, start_id != end_id, both >= 0.
void validate(const SearchOptions& options);

struct DecodedCaption {
  std::vector<int64_t> tokens;  // the words' ids, without <start> and <end>
  double log_prob = 0.0;        // sum of the log-probabilities of the emitted words and <end>
  bool finished = false;        // <end> was emitted before max_length
  torch::Tensor alphas;         // float [n, L] ([n, N, L] multihead): where each of the n words looked
};

// Picks the most probable word at every step, for all B images at once, until every caption
// has emitted <end> or reached max_length. A caption that never emits <end> is returned as it
// stands (finished = false), never dropped.
std::vector<DecodedCaption> greedy_search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options);

}  // namespace saccade
