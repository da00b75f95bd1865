// Trainer: soft- or hard-attention training of a Captioner with validation by real decoding.
//
//   TrainerSetup setup = ...;                 // every component's options, filled by cli/
//   RunLog log(run_dir, metrics_columns(), true);
//   setup.log = &log;
//   setup.on_epoch_end = [&] { write_run_report(run_dir); };
//   TrainResult result = Trainer(setup).run();
//
// The pieces, in order:
//   set-up (the constructor)  data, vocabulary, model, optimizer, resume, feature caches, loaders
//   step()                    one optimizer step: the objective, backward, gradient clipping, the
//                             update (skipped when fp16 gradients overflow). xent: teacher-forced
//                             forward (objectives.h; hard attention adds the REINFORCE terms and
//                             updates their baseline); scst: sampled captions scored with CIDEr-D
//                             (scst.h), over image-level batches
//   end_epoch()               greedy decoding of the validation images scored with
//                             BLEU/ROUGE-L/CIDEr-D; the learning-rate schedule; checkpoints/last
//                             always, checkpoints/best when the chosen metric improved; early
//                             stopping
//   run()                     the epochs, and the result
// What follows training (the best checkpoint on the test split, sample overlays, the report) is
// the command layer's: it loads checkpoints/best as `saccade eval` does.
//
// Reproducibility: parameters are initialized from `seed`; every epoch reseeds LibTorch's
// generator from (seed, epoch), and the loader's order depends only on (seed, epoch), so an
// epoch's losses depend only on the state at its start. Checkpoints are taken at epoch ends,
// which makes `resume` continue exactly as an uninterrupted run would.
#pragma once

#include <torch/optim/optimizer.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/feature_cache.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "decode/search.h"
#include "device/grad_scaler.h"
#include "device/placement.h"
#include "dist/process_group.h"
#include "eval/caption_scores.h"
#include "eval/metrics.h"
#include "io/run_log.h"
#include "models/captioner.h"
#include "models/checkpoint.h"
#include "train/metrics_columns.h"
#include "train/train_options.h"

namespace saccade {

// Everything the trainer needs, each part read from its own config sub-tree by the caller.
struct TrainerSetup {
  TrainOptions train;
  DatasetOptions dataset;
  LoaderOptions train_loader;  // batch_size = train.batch_size, shuffled
  LoaderOptions eval_loader;   // validation batches, in dataset order
  EncoderOptions encoder;
  DecoderOptions decoder;  // vocab_size and annotation_dim are filled in by the trainer
  ScoreOptions scores;
  SearchOptions validation;  // the search that validates: validation_search(train, decode.hard_read)
  std::string config_yaml;   // the resolved config, saved with every checkpoint
  std::filesystem::path run_dir;
  RunLog* log = nullptr;               // metrics.csv and TensorBoard; the main rank's only, else nullptr
  std::function<void()> on_epoch_end;  // after an epoch's checkpoints are written; may be empty
  // Data-parallel peers (dist/process_group.h); nullptr = this process alone. Every rank reads its
  // part of each global batch of train.batch_size; parameters start as rank 0's, gradients are
  // summed over the ranks with each rank's loss weighted by its share of the batch, so every rank
  // takes the same step; validation is shared out and gathered; only the main rank writes files.
  ProcessGroup* group = nullptr;
  // Where the model trains and in which precision: batches move to the device; the forward pass
  // and the objective run under autocast; fp16 scales the loss (device/grad_scaler.h).
  Placement placement;
};

// Throws std::invalid_argument for any option out of range and for options that cannot go
// together; reads nothing, so a command checks it before it creates the run folder.
void validate(const TrainerSetup& setup);

struct TrainResult {
  int64_t epochs_completed = 0;
  int64_t steps = 0;
  bool stopped_early = false;
  std::optional<double> best_metric;  // of TrainOptions::val_metric
  int64_t best_epoch = 0;
  CaptionScores last_validation;                       // scores of the last epoch's validation
  std::optional<ShapesScores> last_validation_shapes;  // ... and on the shapes world its metrics
  std::vector<SkippedImage> skipped_images;            // left out under data.on_bad_image: skip
  double seconds = 0.0;
};

// The search that validates: greedy, up to train.max_length words, hard attention reading as
// decode.hard_read says. The end of training captions the test split with it too.
SearchOptions validation_search(const TrainOptions& train, HardRead hard_read);

// Every component's options read from `config` (train, dataset, loaders, encoder, decoder, eval,
// the validation search) for a run in `run_dir`, validated; log, on_epoch_end, group and
// placement are left to the caller. Throws ConfigError for a missing key or a bad value,
// std::invalid_argument for options that cannot go together.
TrainerSetup trainer_setup_from(const Config& config, const std::filesystem::path& run_dir);

class Trainer {
 public:
  // Set-up; throws std::invalid_argument for bad options or data, std::runtime_error for
  // unreadable files or a checkpoint that does not fit.
  explicit Trainer(const TrainerSetup& setup);
  ~Trainer();

  // Trains until train.epochs or early stopping. Throws std::runtime_error when the loss becomes
  // NaN or infinite (checkpoints/last stays as the last finished epoch left it).
  TrainResult run();

  // The prepared splits (the test split too, for what follows training).
  const PreparedDataset& data() const { return data_; }

 private:
  struct StepLog;

  // The set-up's steps, in order. The splits prepared (the main rank first, data-parallel).
  void prepare_data();
  // The vocabulary (the resumed run's, or built from the training captions) and the datasets.
  void make_datasets(const std::filesystem::path& resume_dir);
  // The model from train.seed (or train.init_from), the optimizer, the loss scaler; a resumed
  // run's weights, optimizer and state.
  void build_model(const std::filesystem::path& resume_dir);
  // train.features: the cached annotations of the training and validation splits.
  void open_features();
  // The training loader (this rank's shard), the validation loader and its search.
  void make_loaders();
  // The config to TensorBoard and one line on what trains.
  void log_setup();
  // Rank 0's parameters and buffers on every rank (data-parallel).
  void broadcast_rank0_state();
  // objective=scst: the sampling search and CIDEr-D over the training references.
  void prepare_self_critical();

  // One optimizer step on `batch`; returns what the metrics row of this step shows.
  StepLog step(const Batch& batch, int64_t epoch);
  // What the step minimizes, this rank's share of the whole batch's (data-parallel), with the
  // terms to log filled in (the whole batch's).
  torch::Tensor xent_objective(const Batch& batch, StepLog& logged);
  torch::Tensor scst_objective(const Batch& batch, StepLog& logged);
  void train_epoch(int64_t epoch);
  // Validates, applies the schedule, writes the checkpoints; returns whether to stop early.
  bool end_epoch(int64_t epoch);
  // train.val_metric of the last validation as the main rank scored it, on every rank;
  // std::nullopt when it has no value.
  std::optional<double> validation_metric();
  // Data-parallel: the whole batch's loss and logged terms, each the sum over the ranks of
  // share(term) times the rank's value.
  void sum_over_ranks(
      const torch::Tensor& total, StepLog& logged, const std::function<double(const std::string&)>& share);
  // The metrics row every rank computed, written by the main rank.
  void write_row(const std::map<std::string, std::string>& row);
  int rank() const { return setup_.group ? setup_.group->rank() : 0; }
  int ranks() const { return setup_.group ? setup_.group->size() : 1; }

  TrainerSetup setup_;
  const TrainOptions& options_;  // setup_.train
  TrainResult result_;
  PreparedDataset data_;
  Vocabulary vocabulary_;
  std::shared_ptr<CaptionDataset> train_set_, val_set_;
  Captioner model_{nullptr};
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  TrainState state_;
  std::unique_ptr<FeatureCache> train_features_, val_features_;
  std::unique_ptr<Loader> train_loader_, val_loader_;
  std::unique_ptr<CaptionSearch> validation_search_;
  std::unique_ptr<CiderD> scst_reward_;  // objective=scst: document frequencies of the training references
  SearchOptions scst_search_;            // objective=scst: how captions are sampled
  GradScaler scaler_{false};
  std::filesystem::path last_checkpoint_;  // this run's checkpoints/last, once written
};

}  // namespace saccade
