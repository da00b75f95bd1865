// A decoded caption as JSON: what `saccade caption --json` prints for each image and what
// `saccade serve` answers to POST /caption, from one function so the two agree to the bit.
//
//   Json record = caption_record(caption, vocabulary, grid);
//   record.at("words"), record.at("attention")   // [n][L] ([n][N][L] with heads)
//
// Members: caption (the words joined), words, log_prob, finished, grid [Hg, Wg] and attention
// (each word's alpha over the Hg * Wg cells, row-major); with n-best captions, n_best: each
// alternative's caption, words, log_prob, finished and attention, best first.
#pragma once

#include <torch/types.h>

#include <array>
#include <cstdint>

#include "data/vocabulary.h"
#include "decode/search.h"
#include "io/json.h"

namespace saccade {

// A tensor of any rank as nested JSON arrays of numbers (doubles).
Json tensor_json(const torch::Tensor& tensor);

Json caption_record(
    const DecodedCaption& caption, const Vocabulary& vocabulary, const std::array<int64_t, 2>& grid);

}  // namespace saccade
