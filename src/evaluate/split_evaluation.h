// Scoring a split with a trained run: what `saccade eval` and the end of `saccade train` share.
//
//   TrainedRun run = load_trained_run(run_dir, job.request());
//   const PreparedDataset data = ensure_prepared(run.dataset, {Split::test});
//   EvaluatedSplit test = evaluate_split(run, data.test, *make_caption_search(run.search));
//   std::cout << describe(test.results);
//
// Decodes the split of the run's dataset in batches of train.batch_size (as training validated),
// from the encoder or from a feature cache, scores it with eval.* (METEOR when configured) and,
// on the shapes world, with the attention metrics; writes <run>/results/<split>.json and
// <split>_scores.json (or another name: `saccade eval` with overrides) and logs one line.
#pragma once

#include <string>

#include "data/feature_cache.h"
#include "decode/decode_split.h"
#include "decode/trained_run.h"

namespace saccade::cli {

struct EvaluatedSplit {
  DecodedSplit decoded;               // the captions and references, in decoding order
  SplitResults results;               // what was written to <run>/results/
  std::vector<SkippedImage> skipped;  // the split's images left out under data.on_bad_image: skip
};

// `images` is a split of ensure_prepared(run.dataset); `features`, when given, its feature cache.
// With a data-parallel `group` the ranks share the decoding and all get the whole split; the
// main rank alone scores it and writes the files (the others' results stay empty).
// `results_name` names the files, <run>/results/<results_name>.json and _scores.json, and is the
// scores file's "split" (the report's row); empty = the split's name.
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

}  // namespace saccade::cli
