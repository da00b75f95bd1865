// `saccade eval --run DIR [--split NAME] [--checkpoint last] [--replace] [decode.beam_size=K ...]`:
// decodes a split with a run's best (or last) checkpoint, scores it and writes the results into
// the run folder:
//   <run>/results/<split>.json          COCO results format [{"image_id": .., "caption": ..}]
//   <run>/results/<split>_scores.json   corpus scores, per-image scores and captions, the search
//                                       used, and for the shapes world the shapes metrics
// With overrides or --checkpoint last they are <split>-<name>.json and <split>-<name>_scores.json
// beside the run's own (which training wrote), <name> the overrides as typed
// ("test-decode.beam_size=5") or their digest; --replace writes over the run's own instead.
// The run is loaded once (decode/trained_run.h): its saved config over today's defaults, with
// the command line's overrides on top, so decode.* and eval.meteor_jar given here apply, while
// a group switch or an architecture key is refused.
// --against FILE (COCO results of the same images, read and checked before anything is decoded
// or written) adds how many captions the two share and both sets' scores side by side
// (eval/caption_agreement.h).
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "base/text.h"
#include "cli/command.h"
#include "eval/caption_agreement.h"
#include "eval/caption_files.h"
#include "evaluate/split_evaluation.h"
#include "viz/run_report.h"

namespace saccade::cli {
namespace {

// Overrides that change how fast or how verbosely a split is decoded, never a caption or a score:
// results under them are the run's own.
bool leaves_results_alone(const std::string& override_text) {
  static const std::set<std::string> keys = {
      "runtime.check_blas", "runtime.log_level", "runtime.threads", "data.workers", "data.prefetch"};
  return keys.count(override_text.substr(0, override_text.find('='))) > 0;
}

// The name of eval's files under <run>/results/: the split's for the run as it trained (or with
// --replace), otherwise <split>-<what differs>, so that training's own results stay: the overrides
// as typed where they make a short, plain file name, else a digest of them.
std::string results_name(const Job& job, const std::string& split_name) {
  const Invocation& invocation = *job.invocation;
  std::vector<std::string> differences;
  for (const auto& override_text : job.overrides) {
    if (!leaves_results_alone(override_text)) differences.push_back(override_text);
  }
  if (invocation.flag("--checkpoint", "best") != "best")
    differences.push_back("checkpoint=" + invocation.flag("--checkpoint"));
  if (differences.empty() || invocation.has_flag("--replace")) return split_name;
  const std::string named = join(differences, ",");
  constexpr size_t kLongestPlainName = 80;
  constexpr const char* kPlainCharacters =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._=,+-";
  const bool plain =
      named.size() <= kLongestPlainName && named.find_first_not_of(kPlainCharacters) == std::string::npos;
  return split_name + "-" + (plain ? named : hex_digest(fnv1a(named.data(), named.size())).substr(0, 8));
}

}  // namespace

int run_eval(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const std::filesystem::path run_dir = invocation.flag("--run");
  if (run_dir.empty()) throw ConfigError("saccade eval needs --run DIR (a training run folder)");
  const std::string split_name = invocation.flag("--split", "test");
  const Split split = parse_split(split_name);
  // Read first: it may be the results file this evaluation replaces.
  const std::string against_path = invocation.flag("--against");
  if (invocation.has_flag("--against") && !std::filesystem::is_regular_file(against_path))
    throw ConfigError("--against: no file at '" + against_path + "'");
  const std::string name = results_name(job, split_name);
  const auto results_path = run_dir / "results" / (name + ".json");
  if (invocation.multirun && !against_path.empty() && std::filesystem::exists(results_path) &&
      std::filesystem::equivalent(against_path, results_path)) {
    throw ConfigError(
        "--against " + against_path +
        " is the file this job of the multirun replaces, which the jobs after it would read; compare with a "
        "copy");
  }
  const std::map<std::string, std::string> against =
      against_path.empty() ? std::map<std::string, std::string>() : read_result_captions(against_path);

  TrainedRun run =
      load_trained_run(run_dir, job.request(), job.placement, invocation.flag("--checkpoint", "best"));
  const auto search = make_caption_search(run.search);
  const PreparedDataset data = ensure_prepared(run.dataset, {split});
  if (!against_path.empty()) {
    // Other images are refused before the split is decoded and its results replaced.
    std::vector<std::string> image_ids;
    for (const auto& image : data.split(split).images) image_ids.push_back(image.image_id);
    check_same_images(image_ids, against, against_path);
  }
  const EvaluatedSplit evaluated = evaluate_split(run, data.split(split), *search, nullptr, nullptr, name);
  const SplitResults& results = evaluated.results;
  // A checkpoint folder copied on its own (no config.yaml beside it) is evaluated, not reported.
  if (std::filesystem::exists(run_dir / "config.yaml")) write_run_report(run_dir);

  std::cout << describe(results);
  if (!evaluated.skipped.empty())
    std::cout << "Skipped " << evaluated.skipped.size() << " bad images (see the log)\n";
  std::cout << "Results: " << results_path.string() << "\n";
  if (!against_path.empty()) {
    const auto agreement = compare_captions(
        evaluated.decoded.references, results.candidates, results.scores, against, against_path,
        score_options_from(run.config), evaluated.decoded.image_order);
    std::cout << "Against " << against_path << ":\n" << describe(agreement);
  }
  return 0;
}

}  // namespace saccade::cli
