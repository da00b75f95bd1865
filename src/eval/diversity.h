// How varied a split's captions are: what a model that always says the safest sentence lacks.
//
//   DiversityScores d = caption_diversity(candidates, n_best, &training_captions);
//
// Over the split's chosen captions (split on spaces): the vocabulary used (distinct words), the
// share of captions that are not word for word a training caption (novel), and distinct-n, the
// distinct n-grams of all captions over the words of all captions (Li et al. 2016), n = 1, 2. Among each
// image's n best captions (decode.n_best > 1): mBLEU-4 (Shetty et al. 2017), the BLEU-4 of each
// alternative against the image's other alternatives as references, averaged over the
// alternatives and then over the images; lower is more diverse.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "eval/split_results.h"

namespace saccade {

// `candidates`: each image's caption; `n_best`: each image's alternatives (images with fewer than
// two are left out of mBLEU-4); `training_captions`: the training captions, words joined by one
// space (nullptr: novelty is not measured).
DiversityScores caption_diversity(
    const std::map<std::string, std::string>& candidates,
    const std::map<std::string, std::vector<ScoredCaption>>& n_best,
    const std::unordered_set<std::string>* training_captions);

// The eval printout's lines.
std::string describe(const DiversityScores& scores);

}  // namespace saccade
