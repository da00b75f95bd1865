// The query of POST /caption: which run, which image of its test split (or the body's bytes), and
// how to search, parsed and checked before anything is decoded.
//
//   POST /caption?run=0&method=beam&beam_size=3&n_best=3          body: the image file's bytes
//   POST /caption?run=1&image=417&method=sample&temperature=0.7&top_p=0.9&seed=3
//
// Parameters (each at most once; any other is refused):
//   run        index of the run in `saccade serve --run ...` order (default 0)
//   image      an image id of the run's test split, instead of a body
//   method     greedy | beam | sample
//   beam_size, n_best, max_length, min_length, top_k, beam_groups     integers
//   temperature, top_p, length_penalty, diversity_penalty             numbers
//   block_unk, block_trigrams                                          true | false
//   hard_read  argmax | expectation (hard attention)
//   layer      the Transformer layer whose cross-attention is returned (0-based, negative from the last)
//   seed       sampling: the seed of the draws (default the run's seed), so a request repeats
// The search starts from the run's decode.* as `saccade caption` uses it (beam_size 1, n_best 1),
// and, as there, beam_size without method makes a greedy run's search a beam search. The
// parameters are named as the decode.* keys, and their rules are search.h's validate(); beyond
// those, beam_size is at most 32 and max_length at most 100, so one request stays small.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "decode/search.h"

namespace saccade {

struct CaptionQuery {
  size_t run = 0;
  std::string image_id;  // empty: the request body is the image
  SearchOptions search;
  std::optional<int64_t> layer;
  std::optional<uint64_t> seed;
};

// The most a request may ask for.
inline constexpr int64_t kMaxServedBeam = 32, kMaxServedLength = 100;

// Parses `parameters` (name, value; in request order) against the runs' searches (`run_searches`,
// each run's decode.* with its vocabulary). Throws RequestError (400) naming the parameter for an
// unknown or repeated one, a value of the wrong type, a run that is not loaded, or a search that
// breaks a rule.
CaptionQuery parse_caption_query(
    const std::vector<std::pair<std::string, std::string>>& parameters,
    const std::vector<SearchOptions>& run_searches);

}  // namespace saccade
