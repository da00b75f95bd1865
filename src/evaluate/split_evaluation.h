// Evaluating a split, in one place: decoding it (decode/decode_split.h; data-parallel ranks share
// the decoding and all get the whole split), measuring on the shapes world where the attention
// looked and what the captions say (evaluate/shapes_evaluator.h), and scoring the captions with
// the coco-caption metrics and their diversity (eval/). Training's validation and test pass and
// `saccade eval` evaluate through here.
//
//   MeasuredSplit measured = measure_split(*model, loader, search, vocabulary, decode, &dataset);
//   SplitResults results = score_split(measured, "test", search.describe(), epoch, score_options);
//
//   // A trained run's split, scored and written to <run>/results/:
//   TrainedRun run = load_trained_run(run_dir, job.request());
//   const PreparedDataset data = ensure_prepared(run.dataset, {Split::test});
//   EvaluatedSplit test = evaluate_split(run, data.test, *make_caption_search(run.search));
//   std::cout << describe(test.results);
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "data/feature_cache.h"
#include "decode/decode_split.h"
#include "decode/trained_run.h"
#include "eval/caption_scores.h"
#include "eval/shapes_metrics.h"
#include "eval/split_results.h"

namespace saccade {

struct MeasuredSplit {
  DecodedSplit decoded;
  std::optional<ShapesScores> shapes;  // on the shapes world: the attention and content metrics
};

// Decodes `loader`'s dataset as decode_split does with `decode`; with `shapes_world` (a dataset
// of kind shapes; nullptr = none) also measures the shapes metrics, the forced relation choice
// included (each probe's two captions scored by caption_log_probs).
MeasuredSplit measure_split(
    CaptionerImpl& model,
    Loader& loader,
    const CaptionSearch& search,
    const Vocabulary& vocabulary,
    DecodeSplitOptions decode,
    const DatasetOptions* shapes_world);

// The measured split scored with the coco-caption metrics and its diversity, as
// eval/split_results.h writes it; `training_captions` (words joined by one space) measure
// novelty, nullptr = not measured.
SplitResults score_split(
    const MeasuredSplit& measured,
    const std::string& split,
    const std::string& search,
    int64_t checkpoint_epoch,
    const ScoreOptions& options,
    const std::unordered_set<std::string>* training_captions = nullptr);

struct EvaluatedSplit {
  DecodedSplit decoded;               // the captions and references, in decoding order
  SplitResults results;               // what was written to <run>/results/
  std::vector<SkippedImage> skipped;  // the split's images left out under data.on_bad_image: skip
};

// A trained run's split: decoded in batches of train.batch_size (as training validated), from
// the encoder or from `features`, the split's feature cache; scored with eval.* (METEOR when
// configured) and, on the shapes world, with the attention metrics; written to
// <run>/results/<split>.json and <split>_scores.json, with one line logged. `images` is a split of
// ensure_prepared(run.dataset). With a data-parallel `group` the ranks share the decoding and all
// get the whole split; the main rank alone scores it and writes the files (the others' results
// stay empty). `results_name` names the files, <run>/results/<results_name>.json and
// _scores.json, and is the scores file's "split" (the report's row); empty = the split's name.
EvaluatedSplit evaluate_split(
    TrainedRun& run,
    const PreparedSplit& images,
    const CaptionSearch& search,
    const FeatureCache* features = nullptr,
    ProcessGroup* group = nullptr,
    const std::string& results_name = "");

// `saccade eval`'s printout: the split, search and checkpoint, one line per metric (METEOR as
// unavailable with its reason), the shapes metrics.
std::string describe(const SplitResults& results);

}  // namespace saccade
