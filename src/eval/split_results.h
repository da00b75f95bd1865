// The files a scored split leaves in a run folder, written by `saccade eval` and at the end of
// training, and read back by the run report:
//   results/<split>.json          COCO results format [{"image_id": .., "caption": ..}], with
//                                 "n_best": [{"caption", "log_prob"}, ...] under decode.n_best > 1
//   results/<split>_scores.json   {"split", "search", "checkpoint_epoch", "images",
//                                  "corpus": {bleu1..4, meteor, rouge_l, cider_d},
//                                  "parameters" (the model's, where known),
//                                  "diversity": {...}, "shapes": {...} (shapes world only),
//                                  "per_image": [...]}
//
//   SplitResults results{"test", "greedy", state.epoch, order, candidates, scores, shapes};
//   write_split_results(run_dir / "results", results);
//
// METEOR is null where it was unavailable, never 0. Image ids that are plain integers are
// written as numbers (the COCO layout), others as strings.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/scored_caption.h"
#include "eval/caption_scores.h"
#include "eval/shapes_metrics.h"

namespace saccade {

// How varied the captions are (eval/diversity.h).
struct DiversityScores {
  int64_t captions = 0;          // the split's captions
  int64_t vocabulary = 0;        // distinct words they use
  std::optional<double> novel;   // share that is not a training caption; none when not measured
  double distinct_1 = 0.0;       // distinct unigrams / unigrams
  double distinct_2 = 0.0;       // distinct bigrams / words
  std::optional<double> mbleu4;  // mean BLEU-4 of each n-best alternative against the others
  int64_t n_best_images = 0;     // images with at least two alternatives (mBLEU-4's)
};

struct SplitResults {
  std::string split;                              // "test"
  std::string search;                             // how the captions were found: "greedy", "beam 3"
  int64_t checkpoint_epoch = 0;                   // the epoch of the checkpoint that captioned
  std::vector<std::string> image_order;           // image ids in decoding order
  std::map<std::string, std::string> candidates;  // the caption of every image id
  CaptionScores scores;
  std::optional<ShapesScores> shapes;  // the shapes world's attention and content metrics
  // decode.n_best > 1: each image's best captions, best first; empty otherwise.
  std::map<std::string, std::vector<ScoredCaption>> n_best = {};
  std::optional<DiversityScores> diversity = {};
  std::optional<int64_t> parameters = {};  // the captioning model's trainable values
};

// Creates `results_dir` and writes <split>.json and <split>_scores.json atomically.
void write_split_results(const std::filesystem::path& results_dir, const SplitResults& results);

}  // namespace saccade
