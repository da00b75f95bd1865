// How two captionings of the same images compare: how many captions are the same text, and the
// coco-caption scores of each against the same references, side by side. `saccade eval
// --against` and `saccade score --against` print it, e.g. bf16 weights against fp32:
//
//   CaptionScores ours = score_captions(references, captions, options);
//   CaptionAgreement agreement = compare_captions(references, captions, ours, against, "fp32.json", options);
//   std::cout << describe(agreement);   // identical 484 of 500 (96.8%), then metric | ours | theirs |
//   difference
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eval/caption_scores.h"

namespace saccade {

struct CaptionAgreement {
  int64_t images = 0;     // images captioned by both
  int64_t identical = 0;  // of them, those whose two captions are the same text
  CaptionScores scores;   // the captions' own
  CaptionScores against;  // the other captions', scored alike
};

// Throws std::invalid_argument naming `against_name`, how many ids differ and a few of them,
// unless `against` captions exactly the images `image_ids`.
void check_same_images(
    const std::vector<std::string>& image_ids,
    const std::map<std::string, std::string>& against,
    const std::string& against_name);

// `scores` are `captions`' (as score_captions gave them, in `file_order`); `against` must caption
// exactly the same images (check_same_images), and is scored in the same order.
CaptionAgreement compare_captions(
    const std::map<std::string, std::vector<std::string>>& references,
    const std::map<std::string, std::string>& captions,
    const CaptionScores& scores,
    const std::map<std::string, std::string>& against,
    const std::string& against_name,
    const ScoreOptions& options,
    const std::vector<std::string>& file_order = {});

// The identical captions' count and share, then one line per metric: the captions' score, the
// other captions', and the difference (METEOR as unavailable where either lacks it).
std::string describe(const CaptionAgreement& agreement);

}  // namespace saccade
