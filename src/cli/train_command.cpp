// `saccade train`: reads every component's options from the config, trains, prints a summary.
#include <iomanip>
#include <iostream>

#include "cli/command.h"
#include "io/log.h"
#include "train/trainer.h"

namespace saccade::cli {
namespace {

TrainerSetup trainer_setup_from(const Config& config, const std::filesystem::path& run_dir) {
  TrainerSetup setup;
  setup.train = train_options_from(config);
  validate(setup.train);
  setup.dataset = dataset_options_from(config);
  validate(setup.dataset);
  setup.train_loader = loader_options_from(config, Split::train, setup.train.batch_size);
  validate(setup.train_loader);
  setup.eval_loader = loader_options_from(config, Split::val, setup.train.batch_size);
  validate(setup.eval_loader);
  setup.encoder = encoder_options_from(config);
  validate(setup.encoder);
  setup.decoder = decoder_options_from(config);
  setup.scores = score_options_from(config);
  setup.viz = viz_options_from(config);
  validate(setup.viz);
  setup.config_yaml = config.to_yaml(true);
  setup.run_dir = run_dir;
  setup.tensorboard = config.get<bool>("run.tensorboard");
  return setup;
}

void print_summary(
    const TrainResult& result, const TrainOptions& options, const std::filesystem::path& run_dir) {
  const CaptionScores& scores = result.last_validation;
  std::cout << std::fixed << std::setprecision(4);
  std::cout << "\nTrained " << result.epochs_completed << " epochs (" << result.steps << " steps) in "
            << std::setprecision(1) << result.seconds << " s"
            << (result.stopped_early ? ", stopped early" : "") << std::setprecision(4) << "\n";
  std::cout << "Validation (last epoch): BLEU-1 " << scores.bleu[0] << "  BLEU-4 " << scores.bleu[3]
            << "  ROUGE-L " << scores.rouge_l << "  CIDEr-D " << scores.cider_d << "\n";
  if (result.test) {
    std::cout << "Test (best checkpoint):  BLEU-1 " << result.test->bleu[0] << "  BLEU-4 "
              << result.test->bleu[3] << "  ROUGE-L " << result.test->rouge_l << "  CIDEr-D "
              << result.test->cider_d << "\n";
  }
  if (result.test_shapes) {
    std::cout << "Test attention and content (shapes world):\n" << describe(*result.test_shapes);
  }
  if (result.best_metric) {
    std::cout << "Best " << options.val_metric << " " << *result.best_metric << " at epoch "
              << result.best_epoch << " -> " << (run_dir / "checkpoints" / "best").string() << "\n";
  }
  if (result.skipped_images > 0)
    std::cout << "Skipped " << result.skipped_images << " bad images (see the log)\n";
  if (!result.samples.empty()) std::cout << "\nTest captions (best checkpoint):\n";
  for (const auto& sample : result.samples) {
    std::cout << "  " << sample.image_id << ": " << sample.caption << "\n";
    if (!sample.references.empty()) std::cout << "      reference: " << sample.references.front() << "\n";
  }
  std::cout << "\nRun folder: " << run_dir.string() << "\n";
}

}  // namespace

int run_train(const Job& job) {
  const TrainerSetup setup = trainer_setup_from(job.composition.config, job.run_dir);
  log::info() << "Run folder: " << job.run_dir.string();
  const TrainResult result = train_captioner(setup);
  print_summary(result, setup.train, job.run_dir);
  return 0;
}

}  // namespace saccade::cli
