// Trainer: soft- or hard-attention training of a Captioner with validation by real decoding.
//
//   TrainerSetup setup = ...;                 // every component's options, filled by cli/
//   TrainResult result = train_captioner(setup);
//
// Each epoch: shuffled (image, caption) batches, forward with teacher forcing, the objective
// (objectives.h; hard attention adds the REINFORCE terms and updates their baseline), backward, gradient
// clipping, an optimizer step; then greedy decoding of the validation images scored with
// BLEU/ROUGE-L/CIDEr-D; checkpoints/last always, checkpoints/best when the chosen metric improved; the
// learning-rate schedule; early stopping.
//
// Reproducibility: parameters are initialized from `seed`; every epoch reseeds LibTorch's
// generator from (seed, epoch), and the loader's order depends only on (seed, epoch), so an
// epoch's losses depend only on the state at its start. Checkpoints are taken at epoch ends,
// which makes `resume` continue exactly as an uninterrupted run would.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/loader.h"
#include "data/prepare.h"
#include "eval/caption_scores.h"
#include "eval/shapes_metrics.h"
#include "models/decoder.h"
#include "models/encoder.h"
#include "train/objectives.h"
#include "viz/attention_overlay.h"

namespace saccade {

enum class OptimizerKind { adam, rmsprop };
enum class LrSchedule { constant, step, plateau };

struct TrainOptions {
  int64_t epochs = 10;      // passes over the training captions
  int64_t batch_size = 32;  // captions per optimizer step
  OptimizerKind optimizer = OptimizerKind::adam;
  double learning_rate = 4e-4;          // the decoder's (and a from-scratch encoder's) learning rate
  double encoder_learning_rate = 1e-4;  // fine-tuned encoder blocks' learning rate
  double weight_decay = 0.0;            // L2 penalty added to the gradients; 0 = none
  double grad_clip = 5.0;               // maximum global gradient norm; 0 = no clipping
  LrSchedule schedule = LrSchedule::constant;
  int64_t lr_step_epochs = 10;      // step: multiply the learning rates by lr_gamma this often
  double lr_gamma = 0.5;            // step and plateau: the factor
  int64_t lr_plateau_patience = 2;  // plateau: epochs without improvement before a reduction
  double alpha_reg = 1.0;           // lambda of the doubly stochastic regularization; 0 = off
  HardAttentionOptions hard;        // the REINFORCE terms, for decoder.attention.mode=hard
  XentReduction xent_reduction = XentReduction::per_caption;
  int64_t log_every = 20;               // optimizer steps between metrics.csv rows
  int64_t max_steps_per_epoch = 0;      // stop an epoch after this many steps; 0 = the whole split
  std::string val_metric = "bleu4";     // bleu1..bleu4 | rouge_l | cider_d: best checkpoint, early stop
  int64_t early_stopping_patience = 0;  // epochs without improvement before stopping; 0 = never
  int64_t val_max_images = 0;           // validate on the first n images; 0 = all
  int64_t max_length = 20;              // longest caption decoded at validation (words)
  int64_t sample_captions = 5;          // test images captioned in the final summary; 0 = none
  std::optional<std::filesystem::path> resume;  // a run folder whose checkpoints/last to continue
  // A folder written by `saccade extract` (train/, val/, test/ feature caches): the decoder
  // trains on these annotations and the frozen encoder never runs. nullopt = run the encoder.
  std::optional<std::filesystem::path> features;
  uint64_t seed = 0;  // the root `seed`
};

// Reads train.* and the root `seed`. Throws ConfigError for missing or ill-typed keys.
TrainOptions train_options_from(const Config& config);
// Throws std::invalid_argument, one sentence per broken rule.
void validate(const TrainOptions& options);

// Everything the trainer needs, each part read from its own config sub-tree by the caller.
struct TrainerSetup {
  TrainOptions train;
  DatasetOptions dataset;
  LoaderOptions train_loader;  // batch_size = train.batch_size, shuffled
  LoaderOptions eval_loader;   // validation/test batches, in dataset order
  EncoderOptions encoder;
  DecoderOptions decoder;  // vocab_size and annotation_dim are filled in by the trainer
  ScoreOptions scores;
  VizOptions viz;           // the attention overlays of a few test images, into samples/
  std::string config_yaml;  // the resolved config, saved with every checkpoint
  std::filesystem::path run_dir;
  bool tensorboard = true;  // also log to run_dir/events.out.tfevents.* (run.tensorboard)
};

// One captioned image, for the final printout.
struct SampleCaption {
  std::string image_id;
  std::string caption;
  std::vector<std::string> references;
};

struct TrainResult {
  int64_t epochs_completed = 0;
  int64_t steps = 0;
  bool stopped_early = false;
  std::optional<double> best_metric;  // of TrainOptions::val_metric
  int64_t best_epoch = 0;
  CaptionScores last_validation;            // scores of the last epoch's validation
  std::optional<CaptionScores> test;        // the best checkpoint on the whole test split (if any)
  std::optional<ShapesScores> test_shapes;  // pointing game, content and relation accuracy (shapes)
  std::vector<SampleCaption> samples;       // the first test images captioned by the best model
  int64_t skipped_images = 0;               // images left out under data.on_bad_image: skip
  double seconds = 0.0;
};

// Trains, writing metrics.csv and checkpoints/{best,last} into setup.run_dir. Throws
// std::runtime_error when the loss becomes NaN or infinite (checkpoints/last stays as the last
// finished epoch left it) and std::invalid_argument for bad options or data.
TrainResult train_captioner(const TrainerSetup& setup);

// The value of a validation metric by name (bleu1..bleu4, rouge_l, cider_d).
double metric_value(const CaptionScores& scores, const std::string& name);

}  // namespace saccade
