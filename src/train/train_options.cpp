// TrainOptions: reading and validating train.* (see train_options.h).
#include "train/train_options.h"

#include <stdexcept>

#include "base/enum_names.h"

namespace saccade {
namespace {

const EnumNames<OptimizerKind> kOptimizerNames(
    "optimizer", {{OptimizerKind::adam, "adam"}, {OptimizerKind::rmsprop, "rmsprop"}});
const EnumNames<LrSchedule> kScheduleNames(
    "schedule",
    {{LrSchedule::constant, "constant"}, {LrSchedule::step, "step"}, {LrSchedule::plateau, "plateau"}});
const EnumNames<ValMetric> kValMetricNames(
    "validation metric",
    {{ValMetric::bleu1, "bleu1"},
     {ValMetric::bleu2, "bleu2"},
     {ValMetric::bleu3, "bleu3"},
     {ValMetric::bleu4, "bleu4"},
     {ValMetric::rouge_l, "rouge_l"},
     {ValMetric::cider_d, "cider_d"},
     {ValMetric::pointing_accuracy, "pointing_accuracy"},
     {ValMetric::content_accuracy, "content_accuracy"},
     {ValMetric::object_recall, "object_recall"},
     {ValMetric::relation_accuracy, "relation_accuracy"},
     {ValMetric::relation_choice_accuracy, "relation_choice_accuracy"}});

}  // namespace

std::string to_string(OptimizerKind kind) {
  return kOptimizerNames.name(kind);
}
OptimizerKind parse_optimizer(const std::string& name) {
  return kOptimizerNames.parse(name);
}
std::string to_string(LrSchedule schedule) {
  return kScheduleNames.name(schedule);
}
LrSchedule parse_schedule(const std::string& name) {
  return kScheduleNames.parse(name);
}
std::string to_string(ValMetric metric) {
  return kValMetricNames.name(metric);
}
const std::vector<ValMetric>& all_val_metrics() {
  static const std::vector<ValMetric> metrics = kValMetricNames.values();
  return metrics;
}
ValMetric parse_val_metric(const std::string& name) {
  return kValMetricNames.parse(name);
}

const EnumNames<Objective> kObjectiveNames(
    "training objective", {{Objective::xent, "xent"}, {Objective::scst, "scst"}});
std::string to_string(Objective objective) {
  return kObjectiveNames.name(objective);
}
Objective parse_objective(const std::string& name) {
  return kObjectiveNames.parse(name);
}

TrainOptions train_options_from(const Config& config) {
  TrainOptions options;
  options.epochs = config.get<int64_t>("train.epochs");
  options.batch_size = config.get<int64_t>("train.batch_size");
  options.objective = config.get_parsed("train.objective", parse_objective);
  options.scst.samples = config.get<int64_t>("train.scst.samples");
  options.scst.baseline = config.get_parsed("train.scst.baseline", parse_scst_baseline);
  options.scst.count_end = config.get<bool>("train.scst.count_end");
  options.scst.function_words = config.get<std::vector<std::string>>("train.scst.function_words");
  options.optimizer = config.get_parsed("train.optimizer", parse_optimizer);
  options.learning_rate = config.get<double>("train.lr");
  options.encoder_learning_rate = config.get<double>("train.encoder_lr");
  options.weight_decay = config.get<double>("train.weight_decay");
  options.grad_clip = config.get<double>("train.grad_clip");
  options.schedule = config.get_parsed("train.schedule", parse_schedule);
  options.lr_step_epochs = config.get<int64_t>("train.lr_step_epochs");
  options.lr_gamma = config.get<double>("train.lr_gamma");
  options.lr_plateau_patience = config.get<int64_t>("train.lr_plateau_patience");
  options.alpha_reg = config.get<double>("train.alpha_reg");
  options.hard.reward = config.get_parsed("train.hard.reward", parse_hard_reward);
  options.hard.reinforce_weight = config.get<double>("train.hard.reinforce_weight");
  options.hard.entropy_weight = config.get<double>("train.hard.entropy_weight");
  options.hard.baseline_decay = config.get<double>("train.hard.baseline_decay");
  options.hard.baseline = config.get_parsed("train.hard.baseline", parse_hard_baseline);
  options.hard.soft_epochs = config.get<int64_t>("train.hard.soft_epochs");
  options.hard.samples = config.get<int64_t>("train.hard.samples");
  options.xent_reduction = config.get_parsed("train.xent_reduction", parse_xent_reduction);
  options.log_every = config.get<int64_t>("train.log_every");
  options.max_steps_per_epoch = config.get<int64_t>("train.max_steps_per_epoch");
  options.val_metric = config.get_parsed("train.val_metric", parse_val_metric);
  options.early_stopping_patience = config.get<int64_t>("train.early_stopping_patience");
  options.val_max_images = config.get<int64_t>("train.val_max_images");
  options.max_length = config.get<int64_t>("train.max_length");
  options.sample_captions = config.get<int64_t>("train.sample_captions");
  if (auto resume = config.get_optional<std::string>("train.resume")) options.resume = *resume;
  if (auto features = config.get_optional<std::string>("train.features")) options.features = *features;
  if (auto init_from = config.get_optional<std::string>("train.init_from")) options.init_from = *init_from;
  options.seed = static_cast<uint64_t>(config.get<int64_t>("seed"));
  return options;
}

void validate(const TrainOptions& options) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(options.epochs >= 1, "train.epochs must be >= 1");
  require(
      options.batch_size >= 1 && options.batch_size <= kMaxBatchSize,
      "train.batch_size must be in [1, " + std::to_string(kMaxBatchSize) + "], got " +
          std::to_string(options.batch_size));
  require(options.learning_rate > 0, "train.lr must be > 0");
  require(options.encoder_learning_rate >= 0, "train.encoder_lr must be >= 0");
  require(options.weight_decay >= 0, "train.weight_decay must be >= 0");
  require(options.grad_clip >= 0, "train.grad_clip must be >= 0 (0 = no clipping)");
  require(options.lr_step_epochs >= 1, "train.lr_step_epochs must be >= 1");
  require(options.lr_gamma > 0, "train.lr_gamma must be > 0");
  require(options.lr_plateau_patience >= 1, "train.lr_plateau_patience must be >= 1");
  require(options.alpha_reg >= 0, "train.alpha_reg must be >= 0");
  require(options.hard.reinforce_weight >= 0, "train.hard.reinforce_weight must be >= 0");
  require(options.hard.entropy_weight >= 0, "train.hard.entropy_weight must be >= 0");
  require(
      options.hard.baseline_decay >= 0 && options.hard.baseline_decay < 1,
      "train.hard.baseline_decay must be in [0, 1)");
  require(options.hard.soft_epochs >= 0, "train.hard.soft_epochs must be >= 0");
  require(options.hard.samples >= 1, "train.hard.samples must be >= 1");
  require(
      options.hard.samples >= 2 || options.hard.baseline != HardBaseline::mean,
      "train.hard.baseline=mean needs train.hard.samples >= 2 (the mean of a caption's other samples)");
  require(
      options.hard.samples == 1 || options.hard.baseline != HardBaseline::expectation,
      "train.hard.baseline=expectation decodes every caption once sampled and once reading the expected "
      "context, so it cannot go with train.hard.samples=" +
          std::to_string(options.hard.samples));
  require(options.log_every >= 1, "train.log_every must be >= 1");
  require(options.max_steps_per_epoch >= 0, "train.max_steps_per_epoch must be >= 0 (0 = whole split)");
  require(options.early_stopping_patience >= 0, "train.early_stopping_patience must be >= 0 (0 = never)");
  require(options.val_max_images >= 0, "train.val_max_images must be >= 0 (0 = all)");
  require(options.max_length >= 1, "train.max_length must be >= 1");
  require(options.sample_captions >= 0, "train.sample_captions must be >= 0");
  require(options.scst.samples >= 1, "train.scst.samples must be >= 1");
  require(
      options.scst.samples >= 2 || options.scst.baseline != ScstBaseline::mean,
      "train.scst.baseline=mean needs train.scst.samples >= 2 (the mean of an image's other samples)");
}

bool is_shapes_metric(ValMetric metric) {
  return metric >= ValMetric::pointing_accuracy;
}

std::optional<double> metric_value(
    const CaptionScores& scores, const std::optional<ShapesScores>& shapes, ValMetric metric) {
  switch (metric) {
    case ValMetric::bleu1:
      return scores.bleu[0];
    case ValMetric::bleu2:
      return scores.bleu[1];
    case ValMetric::bleu3:
      return scores.bleu[2];
    case ValMetric::bleu4:
      return scores.bleu[3];
    case ValMetric::rouge_l:
      return scores.rouge_l;
    case ValMetric::cider_d:
      return scores.cider_d;
    default:
      break;
  }
  if (!shapes) return std::nullopt;
  switch (metric) {
    case ValMetric::pointing_accuracy:
      return shapes->pointing_accuracy;
    case ValMetric::content_accuracy:
      return shapes->content_accuracy;
    case ValMetric::object_recall:
      return shapes->object_recall;
    case ValMetric::relation_accuracy:
      return shapes->relation_accuracy;
    case ValMetric::relation_choice_accuracy:
      return shapes->relation_choice_accuracy;
    default:
      return std::nullopt;
  }
}

}  // namespace saccade
