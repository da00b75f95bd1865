// TrainOptions: every train.* setting, read from the config in one place and validated.
//
//   TrainOptions options = train_options_from(config);   // train.* and the root `seed`
//   validate(options);
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "config/config.h"
#include "eval/caption_scores.h"
#include "eval/shapes_metrics.h"
#include "train/objectives.h"
#include "train/scst.h"

namespace saccade {

enum class OptimizerKind { adam, rmsprop };
std::string to_string(OptimizerKind kind);
OptimizerKind parse_optimizer(const std::string& name);  // adam | rmsprop

enum class LrSchedule { constant, step, plateau };
std::string to_string(LrSchedule schedule);
LrSchedule parse_schedule(const std::string& name);  // constant | step | plateau

// What training maximizes: the references' likelihood (with the paper's regularizers and, for
// hard attention, its REINFORCE terms), or the CIDEr-D of sampled captions (scst.h).
enum class Objective { xent, scst };
std::string to_string(Objective objective);
Objective parse_objective(const std::string& name);  // xent | scst

// The validation score that picks the best checkpoint and drives early stopping: a caption
// metric, or on the shapes world one of its metrics (eval/shapes_metrics.h), which see what
// caption metrics hardly do (BLEU-4 hardly moves when a relation word changes).
enum class ValMetric {
  bleu1,
  bleu2,
  bleu3,
  bleu4,
  rouge_l,
  cider_d,
  pointing_accuracy,  // the shapes world's, from here on
  content_accuracy,
  object_recall,
  relation_accuracy,
  relation_choice_accuracy
};
std::string to_string(ValMetric metric);          // also its metrics.csv column and its scores JSON key
const std::vector<ValMetric>& all_val_metrics();  // in the order above
ValMetric parse_val_metric(const std::string& name);
bool is_shapes_metric(ValMetric metric);
// The metric in one validation's scores; std::nullopt for a shapes metric without shapes scores
// or whose ratio has no denominator (no relation stated). An epoch without a value never
// improves on one with a value.
std::optional<double> metric_value(
    const CaptionScores& scores, const std::optional<ShapesScores>& shapes, ValMetric metric);

// The largest train.batch_size: far beyond any machine's memory, and small enough that counts of
// images (steps x batch) never overflow.
constexpr int64_t kMaxBatchSize = int64_t{1} << 24;

struct TrainOptions {
  int64_t epochs = 10;      // passes over the training captions (scst: images)
  int64_t batch_size = 32;  // captions per optimizer step (scst: images, each sampled scst.samples times)
  Objective objective = Objective::xent;
  ScstOptions scst;  // objective=scst
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
  int64_t log_every = 20;                   // optimizer steps between metrics.csv rows
  int64_t max_steps_per_epoch = 0;          // stop an epoch after this many steps; 0 = the whole split
  ValMetric val_metric = ValMetric::bleu4;  // best checkpoint and early stopping
  int64_t early_stopping_patience = 0;      // epochs without improvement before stopping; 0 = never
  int64_t val_max_images = 0;               // validate on the first n images; 0 = all
  int64_t max_length = 20;      // longest caption decoded at validation, and sampled by SCST (words)
  int64_t sample_captions = 5;  // test images captioned in the final summary; 0 = none
  // A run folder whose checkpoints/last to continue; its architecture keys must be this run's.
  std::optional<std::filesystem::path> resume;
  // A run folder whose checkpoints/best weights start this run (a fresh optimizer, schedule and
  // epoch count); its vocabulary and architecture must be this run's. Ignored when resuming.
  std::optional<std::filesystem::path> init_from;
  // A folder written by `saccade extract` (train/, val/, test/ feature caches): the decoder
  // trains on these annotations and the frozen encoder never runs. nullopt = run the encoder.
  std::optional<std::filesystem::path> features;
  uint64_t seed = 0;  // the root `seed`
};

// Reads train.* and the root `seed`. Throws ConfigError for missing, ill-typed or unknown values.
TrainOptions train_options_from(const Config& config);
// Throws std::invalid_argument, one sentence per broken rule.
void validate(const TrainOptions& options);

}  // namespace saccade
