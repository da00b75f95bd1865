// `saccade train`: reads every component's options from the config, trains, then scores the best
// checkpoint on the test split, draws sample overlays, writes the report and prints a summary.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "cli/command.h"
#include "evaluate/split_evaluation.h"
#include "io/log.h"
#include "io/run_folder.h"
#include "train/trainer.h"
#include "viz/run_report.h"
#include "viz/sample_overlays.h"

namespace saccade::cli {
namespace {

// What the end of training found on the test split.
struct TestPass {
  SplitResults results;
  std::vector<SkippedImage> skipped;
  std::vector<std::string> sample_lines;  // the first train.sample_captions captions, for the printout
};

// The sample overlays as TensorBoard images, and their captions as one markdown table.
void log_samples(EventWriter& events, const std::vector<SampleOverlay>& samples, int64_t step) {
  std::string table = "| image | generated | reference |\n|---|---|---|\n";
  for (const SampleOverlay& sample : samples) {
    events.add_image(
        "samples/" + sample.image_id, read_file_bytes(sample.file), static_cast<int>(sample.height),
        static_cast<int>(sample.width), 3, step);
    table += "| " + sample.image_id + " | " + sample.caption + " | " +
             (sample.references.empty() ? "" : sample.references.front()) + " |\n";
  }
  events.add_text("samples/captions", table, step);
}

// The best checkpoint, loaded as `saccade eval` loads it, on the whole test split with the
// validation search (from `features` when training used a feature cache); the test row of
// metrics.csv, results/test*.json, and the sample overlays.
TestPass test_best_checkpoint(
    const Job& job,
    const TrainerSetup& setup,
    const VizOptions& viz,
    const PreparedSplit& test_images,
    const FeatureCache* features,
    const TrainResult& trained,
    RunLog* log) {
  ComposeRequest request = job.request();
  request.overrides.clear();  // the saved config already holds them
  TrainedRun best = load_trained_run(job.run_dir, request, job.placement);
  const auto search = make_caption_search(setup.validation);
  TestPass pass;
  const EvaluatedSplit test = evaluate_split(best, test_images, *search, features, job.group);
  pass.results = test.results;
  pass.skipped = test.skipped;
  if (log == nullptr) return pass;  // another rank writes the files
  auto row = score_row(test.results.scores, test.results.shapes);
  row["kind"] = "test";
  row["epoch"] = std::to_string(trained.best_epoch);
  row["step"] = std::to_string(trained.steps);
  log->write(row, trained.steps);
  const auto& order = test.decoded.image_order;
  const auto shown = std::min<size_t>(order.size(), static_cast<size_t>(setup.train.sample_captions));
  for (size_t i = 0; i < shown; ++i) {
    pass.sample_lines.push_back("  " + order[i] + ": " + test.decoded.candidates.at(order[i]));
    const auto& references = test.decoded.references.at(order[i]);
    if (!references.empty()) pass.sample_lines.push_back("      reference: " + references.front());
  }
  if (viz.sample_images > 0) {
    const auto images = make_caption_dataset(test_images, best.vocabulary, best.dataset.vocabulary);
    const std::vector<SampleOverlay> overlays = write_sample_overlays(
        *best.model, best.vocabulary, *images, viz.sample_images, best.dataset.image, setup.validation, viz,
        job.run_dir / "samples", best.dataset.on_bad_image, best.placement.precision);
    if (EventWriter* events = log->events()) log_samples(*events, overlays, trained.steps);
  }
  return pass;
}

void print_summary(
    const TrainResult& result,
    const std::optional<TestPass>& test,
    const TrainOptions& options,
    const std::filesystem::path& run_dir) {
  const CaptionScores& scores = result.last_validation;
  std::cout << std::fixed << std::setprecision(4);
  std::cout << "\nTrained " << result.epochs_completed << " epochs (" << result.steps << " steps) in "
            << std::setprecision(1) << result.seconds << " s"
            << (result.stopped_early ? ", stopped early" : "") << std::setprecision(4) << "\n";
  std::cout << "Validation (last epoch): BLEU-1 " << scores.bleu[0] << "  BLEU-4 " << scores.bleu[3]
            << "  ROUGE-L " << scores.rouge_l << "  CIDEr-D " << scores.cider_d << "\n";
  if (test) {
    const CaptionScores& tested = test->results.scores;
    std::cout << "Test (best checkpoint):  BLEU-1 " << tested.bleu[0] << "  BLEU-4 " << tested.bleu[3]
              << "  ROUGE-L " << tested.rouge_l << "  CIDEr-D " << tested.cider_d << "\n";
    if (test->results.shapes)
      std::cout << "Test attention and content (shapes world):\n" << describe(*test->results.shapes);
  }
  if (result.best_metric) {
    std::cout << "Best " << to_string(options.val_metric) << " " << *result.best_metric << " at epoch "
              << result.best_epoch << " -> " << (run_dir / "checkpoints" / "best").string() << "\n";
  }
  std::vector<SkippedImage> skipped = result.skipped_images;
  if (test) add_distinct(skipped, test->skipped);
  if (!skipped.empty()) std::cout << "Skipped " << skipped.size() << " bad images (see the log)\n";
  if (test && !test->sample_lines.empty()) {
    std::cout << "\nTest captions (best checkpoint):\n";
    for (const auto& line : test->sample_lines) std::cout << line << "\n";
  }
  std::cout << "\nRun folder: " << run_dir.string() << "\n";
}

}  // namespace

void check_train(const Config& config) {
  trainer_setup_from(config, {});
  validate(viz_options_from(config));
  // decode.* captions the test split after training (bad endings are looked up in the data's
  // vocabulary then).
  validate(search_options_from(config, Vocabulary(std::vector<std::string>{})));
}

int run_train(const Job& job) {
  const Config& config = job.composition.config;
  TrainerSetup setup = trainer_setup_from(config, job.run_dir);
  const VizOptions viz = viz_options_from(config);
  validate(viz);
  const bool main_rank = job.group == nullptr || job.group->is_main();
  // Declared before what writes into the folder, so that it is taken back after they close.
  UnstartedRunFolder unstarted(job.run_dir);
  std::optional<RunLog> log;
  if (main_rank) {
    log.emplace(job.run_dir, metrics_columns(), config.get<bool>("run.tensorboard"));
    setup.log = &*log;
    setup.on_epoch_end = [&] { write_run_report(job.run_dir); };
  }
  setup.group = job.group;
  setup.placement = job.placement;
  log::info() << "Run folder: " << job.run_dir.string();
  PreparedSplit test_images;
  std::unique_ptr<FeatureCache> test_features;
  TrainResult result;
  {
    Trainer trainer(setup);  // released before the test pass, which loads the best checkpoint
    test_images = trainer.data().test;
    if (setup.train.features && !test_images.images.empty()) {  // checked now, not after training
      test_features = open_split_features(
          *setup.train.features, Split::test, test_images.images,
          describe_annotations(setup.encoder, setup.dataset.image));
    }
    unstarted.started();  // set-up refused nothing: from here on the folder is the run's record
    result = trainer.run();
    check_unchanged(trainer.data());  // the test pass reads the dataset again
  }
  std::optional<TestPass> test;
  // The main rank's files decide, for every rank (other machines may not see them).
  bool has_best = main_rank && std::filesystem::exists(job.run_dir / "checkpoints" / "best");
  if (job.group != nullptr) has_best = job.group->all_gather(has_best ? "1" : "0").front() == "1";
  if (!test_images.images.empty() && has_best) {
    test = test_best_checkpoint(
        job, setup, viz, test_images, test_features.get(), result, log ? &*log : nullptr);
    if (main_rank) write_run_report(job.run_dir);
  }
  if (main_rank) print_summary(result, test, setup.train, job.run_dir);
  return 0;
}

}  // namespace saccade::cli
