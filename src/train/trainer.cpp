// The training loop: epochs, validation by decoding, checkpoints, schedules, early stopping.
#include "train/trainer.h"

#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adam.h>
#include <torch/optim/rmsprop.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>

#include "data/rng.h"
#include "decode/search.h"
#include "eval/split_results.h"
#include "io/log.h"
#include "io/metrics_csv.h"
#include "io/progress.h"
#include "io/run_folder.h"
#include "io/tensorboard_events.h"
#include "models/captioner.h"
#include "models/feature_cache.h"
#include "train/checkpoint.h"
#include "train/shapes_evaluator.h"
#include "viz/run_report.h"
#include "viz/sample_overlays.h"

namespace saccade {
namespace {

const std::vector<std::string> kValMetrics = {"bleu1", "bleu2", "bleu3", "bleu4", "rouge_l", "cider_d"};

const std::vector<std::string> kCsvColumns = {
    "kind",  "epoch",        "step",  "loss",  "xent",  "alpha_reg", "reinforce", "attention_entropy",
    "lr",    "images_per_s", "bleu1", "bleu2", "bleu3", "bleu4",     "rouge_l",   "cider_d",
    "meteor"};

OptimizerKind parse_optimizer(const std::string& name) {
  if (name == "adam") return OptimizerKind::adam;
  if (name == "rmsprop") return OptimizerKind::rmsprop;
  throw ConfigError("train.optimizer must be adam or rmsprop, got '" + name + "'");
}

LrSchedule parse_schedule(const std::string& name) {
  if (name == "constant") return LrSchedule::constant;
  if (name == "step") return LrSchedule::step;
  if (name == "plateau") return LrSchedule::plateau;
  throw ConfigError("train.schedule must be constant, step or plateau, got '" + name + "'");
}

// The optimizer over the decoder (and an encoder trained from scratch) at learning_rate, and the
// trainable blocks of a pretrained encoder at encoder_learning_rate. Frozen parameters are left out.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(
    CaptionerImpl& model, const TrainOptions& options, bool pretrained_encoder) {
  std::vector<torch::Tensor> main_parameters, encoder_parameters;
  for (const auto& parameter : model.decoder->parameters()) main_parameters.push_back(parameter);
  for (const auto& parameter : model.encoder->parameters()) {
    if (!parameter.requires_grad()) continue;
    (pretrained_encoder ? encoder_parameters : main_parameters).push_back(parameter);
  }
  std::vector<torch::optim::OptimizerParamGroup> groups;
  auto group_options = [&](double learning_rate) -> std::unique_ptr<torch::optim::OptimizerOptions> {
    if (options.optimizer == OptimizerKind::adam) {
      return std::make_unique<torch::optim::AdamOptions>(
          torch::optim::AdamOptions(learning_rate).weight_decay(options.weight_decay));
    }
    return std::make_unique<torch::optim::RMSpropOptions>(
        torch::optim::RMSpropOptions(learning_rate).weight_decay(options.weight_decay));
  };
  groups.emplace_back(main_parameters, group_options(options.learning_rate));
  if (!encoder_parameters.empty()) {
    groups.emplace_back(encoder_parameters, group_options(options.encoder_learning_rate));
  }
  if (options.optimizer == OptimizerKind::adam) {
    return std::make_unique<torch::optim::Adam>(groups, torch::optim::AdamOptions(options.learning_rate));
  }
  return std::make_unique<torch::optim::RMSprop>(groups, torch::optim::RMSpropOptions(options.learning_rate));
}

void set_learning_rates(torch::optim::Optimizer& optimizer, const TrainState& state) {
  auto& groups = optimizer.param_groups();
  groups[0].options().set_lr(state.learning_rate);
  if (groups.size() > 1) groups[1].options().set_lr(state.encoder_learning_rate);
}

// The annotations of a batch: from the feature cache when there is one (rows = the batch's
// images within the split), else by running the encoder on the batch's images.
torch::Tensor annotations_of(
    CaptionerImpl& model, const Batch& batch, const CaptionDataset& dataset, const FeatureCache* features) {
  if (features == nullptr) return model.encode(batch.images);  // [B, L, D]
  std::vector<int64_t> rows;
  for (const int64_t index : batch.indices) rows.push_back(dataset.image_of(index));
  return features->batch(rows);  // [B, L, D]
}

// The feature cache of one split, checked against the split's images and the configured encoder.
std::unique_ptr<FeatureCache> open_features(
    const std::filesystem::path& root,
    Split split,
    const PreparedSplit& images,
    const EncoderOptions& encoder) {
  const auto dir = root / to_string(split);
  auto cache = std::make_unique<FeatureCache>(dir);
  const auto& ids = cache->image_ids();
  bool same_images = ids.size() == images.images.size();
  for (size_t i = 0; same_images && i < ids.size(); ++i) same_images = ids[i] == images.images[i].image_id;
  if (!same_images) {
    throw std::invalid_argument(
        "Feature cache " + dir.string() + " holds other images than the " + to_string(split) +
        " split. HINT: rerun saccade extract with this dataset config");
  }
  const auto name = cache->description().find("encoder.name");
  if (name != cache->description().end() && name->second != encoder.name) {
    throw std::invalid_argument(
        "Feature cache " + dir.string() + " was extracted with encoder " + name->second + ", not " +
        encoder.name);
  }
  return cache;
}

// The search used for validation, test scores and samples: greedy, up to train.max_length words.
SearchOptions greedy_options(const TrainOptions& options) {
  SearchOptions search;
  search.max_length = options.max_length;
  search.start_id = Vocabulary::kStart;
  search.end_id = Vocabulary::kEnd;
  return search;
}

// Greedy captions for the images of `loader`'s dataset (at most max_images; 0 = all).
struct Decoded {
  std::map<std::string, std::vector<std::string>> references;  // raw text per image id
  std::map<std::string, std::string> candidates;
  std::vector<SampleCaption> in_order;
};

Decoded decode_split(
    CaptionerImpl& model,
    Loader& loader,
    const FeatureCache* features,
    const Vocabulary& vocabulary,
    const TrainOptions& options,
    int64_t max_images,
    ShapesEvaluator* shapes = nullptr) {
  torch::NoGradGuard no_grad;
  const bool was_training = model.is_training();
  model.eval();
  const SearchOptions search = greedy_options(options);
  Decoded decoded;
  loader.start_epoch(0);
  while (std::optional<Batch> batch = loader.next()) {
    const auto& dataset = static_cast<const CaptionDataset&>(loader.dataset());
    const auto captions =
        greedy_search(*model.decoder, annotations_of(model, *batch, dataset, features), search);
    for (int64_t b = 0; b < batch->size(); ++b) {
      if (max_images > 0 && static_cast<int64_t>(decoded.in_order.size()) >= max_images) break;
      SampleCaption sample;
      sample.image_id = batch->image_ids[b];
      const std::vector<std::string> words = vocabulary.decode(captions[b].tokens);
      sample.caption = join_words(words);
      if (shapes != nullptr) {
        shapes->add(sample.image_id, words, captions[b].alphas, batch->images.size(2), batch->images.size(3));
      }
      for (const auto& reference : batch->references[b]) sample.references.push_back(join_words(reference));
      decoded.references[sample.image_id] = sample.references;
      decoded.candidates[sample.image_id] = sample.caption;
      decoded.in_order.push_back(std::move(sample));
    }
    if (max_images > 0 && static_cast<int64_t>(decoded.in_order.size()) >= max_images) break;
  }
  if (was_training) model.train();
  return decoded;
}

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

std::map<std::string, std::string> score_row(const CaptionScores& scores) {
  std::map<std::string, std::string> row;
  for (const auto& name : kValMetrics) row[name] = MetricsCsv::number(metric_value(scores, name));
  if (scores.meteor) row["meteor"] = MetricsCsv::number(*scores.meteor);
  return row;
}

}  // namespace

TrainOptions train_options_from(const Config& config) {
  TrainOptions options;
  options.epochs = config.get<int64_t>("train.epochs");
  options.batch_size = config.get<int64_t>("train.batch_size");
  options.optimizer = parse_optimizer(config.get<std::string>("train.optimizer"));
  options.learning_rate = config.get<double>("train.lr");
  options.encoder_learning_rate = config.get<double>("train.encoder_lr");
  options.weight_decay = config.get<double>("train.weight_decay");
  options.grad_clip = config.get<double>("train.grad_clip");
  options.schedule = parse_schedule(config.get<std::string>("train.schedule"));
  options.lr_step_epochs = config.get<int64_t>("train.lr_step_epochs");
  options.lr_gamma = config.get<double>("train.lr_gamma");
  options.lr_plateau_patience = config.get<int64_t>("train.lr_plateau_patience");
  options.alpha_reg = config.get<double>("train.alpha_reg");
  options.hard.reward = parse_hard_reward(config.get<std::string>("train.hard.reward"));
  options.hard.reinforce_weight = config.get<double>("train.hard.reinforce_weight");
  options.hard.entropy_weight = config.get<double>("train.hard.entropy_weight");
  options.hard.baseline_decay = config.get<double>("train.hard.baseline_decay");
  options.xent_reduction = parse_xent_reduction(config.get<std::string>("train.xent_reduction"));
  options.log_every = config.get<int64_t>("train.log_every");
  options.max_steps_per_epoch = config.get<int64_t>("train.max_steps_per_epoch");
  options.val_metric = config.get<std::string>("train.val_metric");
  options.early_stopping_patience = config.get<int64_t>("train.early_stopping_patience");
  options.val_max_images = config.get<int64_t>("train.val_max_images");
  options.max_length = config.get<int64_t>("train.max_length");
  options.sample_captions = config.get<int64_t>("train.sample_captions");
  if (auto resume = config.get_optional<std::string>("train.resume")) options.resume = *resume;
  if (auto features = config.get_optional<std::string>("train.features")) options.features = *features;
  options.seed = static_cast<uint64_t>(config.get<int64_t>("seed"));
  return options;
}

void validate(const TrainOptions& options) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(options.epochs >= 1, "train.epochs must be >= 1");
  require(options.batch_size >= 1, "train.batch_size must be >= 1");
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
  require(options.log_every >= 1, "train.log_every must be >= 1");
  require(options.max_steps_per_epoch >= 0, "train.max_steps_per_epoch must be >= 0 (0 = whole split)");
  bool known_metric = false;
  for (const auto& name : kValMetrics) known_metric = known_metric || name == options.val_metric;
  require(
      known_metric, "train.val_metric must be one of bleu1, bleu2, bleu3, bleu4, rouge_l, cider_d; got '" +
                        options.val_metric + "'");
  require(options.early_stopping_patience >= 0, "train.early_stopping_patience must be >= 0 (0 = never)");
  require(options.val_max_images >= 0, "train.val_max_images must be >= 0 (0 = all)");
  require(options.max_length >= 1, "train.max_length must be >= 1");
  require(options.sample_captions >= 0, "train.sample_captions must be >= 0");
}

double metric_value(const CaptionScores& scores, const std::string& name) {
  if (name.size() == 5 && name.rfind("bleu", 0) == 0 && name[4] >= '1' && name[4] <= '4') {
    return scores.bleu[name[4] - '1'];
  }
  if (name == "rouge_l") return scores.rouge_l;
  if (name == "cider_d") return scores.cider_d;
  throw std::invalid_argument("Unknown metric '" + name + "'");
}

// Every number of a metrics.csv row as a TensorBoard scalar "<kind>/<column>" at `step`.
void log_scalars(EventWriter& events, const std::map<std::string, std::string>& row, int64_t step) {
  for (const auto& [column, value] : row) {
    if (column == "kind" || column == "epoch" || column == "step") continue;
    events.add_scalar(row.at("kind") + "/" + column, std::stod(value), step);
  }
}

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

TrainResult train_captioner(const TrainerSetup& setup) {
  const TrainOptions& options = setup.train;
  validate(options);
  const auto started = std::chrono::steady_clock::now();
  TrainResult result;

  const PreparedDataset data = ensure_prepared(setup.dataset);
  result.skipped_images = static_cast<int64_t>(data.skipped().size());
  const std::filesystem::path resume_dir =
      options.resume ? *options.resume / "checkpoints" / "last" : std::filesystem::path();
  if (options.resume) check_checkpoint(resume_dir);
  const Vocabulary vocabulary =
      options.resume ? load_checkpoint_vocabulary(resume_dir)
                     : build_vocabulary(data.train.images, setup.dataset.vocabulary.min_word_count);
  const auto train_set = make_caption_dataset(data.train, vocabulary, setup.dataset.vocabulary);
  const auto val_set = make_caption_dataset(data.val, vocabulary, setup.dataset.vocabulary);
  const auto test_set = make_caption_dataset(data.test, vocabulary, setup.dataset.vocabulary);

  torch::manual_seed(options.seed);
  Captioner model = build_captioner(setup.encoder, setup.decoder, vocabulary.size());
  auto optimizer = make_optimizer(*model, options, setup.encoder.weights.has_value());
  TrainState state;
  state.learning_rate = options.learning_rate;
  state.encoder_learning_rate = options.encoder_learning_rate;
  if (options.resume) {
    state = load_checkpoint(resume_dir, *model, optimizer.get());
    set_learning_rates(*optimizer, state);
    log::info() << "Resuming " << options.resume->string() << " after epoch " << state.epoch << " (step "
                << state.step << ")";
  }

  std::unique_ptr<FeatureCache> train_features, val_features, test_features;
  if (options.features) {
    if (setup.encoder.trainable_blocks != 0) {
      throw std::invalid_argument(
          "train.features needs a frozen encoder (encoder.trainable_blocks=0): cached annotations cannot be "
          "fine-tuned");
    }
    train_features = open_features(*options.features, Split::train, data.train, setup.encoder);
    val_features = open_features(*options.features, Split::val, data.val, setup.encoder);
    if (!data.test.images.empty())
      test_features = open_features(*options.features, Split::test, data.test, setup.encoder);
    log::info() << "Annotations from the feature cache " << options.features->string()
                << ": the encoder does not run";
  }

  Loader train_loader(
      train_set, setup.train_loader, setup.dataset.image,
      make_augmentation(setup.dataset.augment, vocabulary));
  Loader val_loader(val_set, setup.eval_loader, setup.dataset.image);
  MetricsCsv csv(setup.run_dir / "metrics.csv", kCsvColumns);
  std::optional<EventWriter> events;
  if (setup.tensorboard) {
    events.emplace(setup.run_dir);
    // Four leading spaces make the YAML a code block in TensorBoard's markdown.
    std::string config_text;
    std::istringstream config_lines(setup.config_yaml);
    for (std::string line; std::getline(config_lines, line);) config_text += "    " + line + "\n";
    events->add_text("config", config_text, state.step);
  }
  // Every metrics.csv row also goes to TensorBoard.
  const auto log_row = [&](const std::map<std::string, std::string>& row) {
    csv.write(row);
    if (events) log_scalars(*events, row, state.step);
  };
  const auto checkpoints = setup.run_dir / "checkpoints";
  log::info() << "Training on " << train_set->size() << " captions of " << data.train.images.size()
              << " images; validating on " << val_set->size() << " images; vocabulary " << vocabulary.size()
              << " words; " << parameter_count(*model) << " parameters";

  model->train();
  for (int64_t epoch = state.epoch + 1; epoch <= options.epochs; ++epoch) {
    torch::manual_seed(mix_seed({options.seed, static_cast<uint64_t>(epoch)}));
    train_loader.start_epoch(epoch);
    int64_t steps_this_epoch = train_loader.batches_per_epoch();
    if (options.max_steps_per_epoch > 0)
      steps_this_epoch = std::min(steps_this_epoch, options.max_steps_per_epoch);
    ProgressBar progress(steps_this_epoch * options.batch_size, "epoch " + std::to_string(epoch), "img");
    int64_t epoch_steps = 0;
    while (epoch_steps < steps_this_epoch) {
      std::optional<Batch> batch = train_loader.next();
      if (!batch) break;
      // Inputs are <start> w1 .. wn, targets w1 .. wn <end>: the same row shifted by one.
      const auto inputs = batch->tokens.slice(1, 0, -1);                                          // [B, T-1]
      const auto targets = batch->tokens.slice(1, 1);                                             // [B, T-1]
      const auto steps = batch->lengths - 1;                                                      // [B]
      const auto annotations = annotations_of(*model, *batch, *train_set, train_features.get());  // [B, L, D]
      const DecoderOutput output = model->decoder->forward(annotations, inputs, steps);
      const SoftAttentionLoss loss = soft_attention_loss(
          output.logits, targets, steps, output.alphas, options.alpha_reg, options.xent_reduction);
      torch::Tensor total = loss.total;
      std::optional<HardAttentionTerms> hard;
      if (output.weights.defined()) {
        hard = hard_attention_terms(
            -loss.caption_nll, output.alphas, output.weights, output.expectation_rows, steps,
            state.reinforce_baseline, options.hard);
        total = total + hard->loss;
      }
      const double loss_value = total.item<double>();
      if (!std::isfinite(loss_value)) {
        throw std::runtime_error(
            "The loss became " + std::string(std::isnan(loss_value) ? "NaN" : "infinite") + " at epoch " +
            std::to_string(epoch) + ", step " + std::to_string(state.step + 1) +
            "; training stopped. The last good checkpoint is " + (checkpoints / "last").string() +
            " (epoch " + std::to_string(state.epoch) + "). HINT: lower train.lr or set train.grad_clip");
      }
      optimizer->zero_grad();
      total.backward();
      if (options.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model->parameters(), options.grad_clip);
      optimizer->step();
      if (hard && hard->reward) {
        const double decay = options.hard.baseline_decay;
        state.reinforce_baseline = state.reinforce_baseline
                                       ? decay * *state.reinforce_baseline + (1.0 - decay) * *hard->reward
                                       : *hard->reward;
      }
      ++state.step;
      ++epoch_steps;
      progress.advance(batch->size(), {{"loss", loss_value}});
      if (state.step % options.log_every == 0 || epoch_steps == steps_this_epoch) {
        std::map<std::string, std::string> row = {
            {"kind", "train"},
            {"epoch", std::to_string(epoch)},
            {"step", std::to_string(state.step)},
            {"loss", MetricsCsv::number(loss_value)},
            {"xent", MetricsCsv::number(loss.xent.item<double>())},
            {"alpha_reg", MetricsCsv::number(loss.alpha_reg.item<double>())},
            {"lr", MetricsCsv::number(state.learning_rate)},
            {"images_per_s", MetricsCsv::number(progress.rate())}};
        if (hard) {
          row["reinforce"] = MetricsCsv::number(hard->reinforce.item<double>());
          row["attention_entropy"] = MetricsCsv::number(hard->entropy.item<double>());
        }
        log_row(row);
      }
    }
    progress.finish();

    const Decoded decoded =
        decode_split(*model, val_loader, val_features.get(), vocabulary, options, options.val_max_images);
    result.last_validation = score_captions(decoded.references, decoded.candidates, setup.scores);
    const double metric = metric_value(result.last_validation, options.val_metric);
    auto row = score_row(result.last_validation);
    row["kind"] = "val";
    row["epoch"] = std::to_string(epoch);
    row["step"] = std::to_string(state.step);
    row["lr"] = MetricsCsv::number(state.learning_rate);
    log_row(row);
    log::info() << "epoch " << epoch << " validation: BLEU-4 " << result.last_validation.bleu[3]
                << ", CIDEr-D " << result.last_validation.cider_d << " (" << decoded.in_order.size()
                << " images)";

    state.epoch = epoch;
    const bool improved = !state.best_metric || metric > *state.best_metric;
    if (improved) {
      state.best_metric = metric;
      state.best_epoch = epoch;
      state.epochs_without_improvement = 0;
    } else {
      ++state.epochs_without_improvement;
    }
    // Learning-rate schedule, applied from the next epoch on.
    double factor = 1.0;
    if (options.schedule == LrSchedule::step && epoch % options.lr_step_epochs == 0)
      factor = options.lr_gamma;
    if (options.schedule == LrSchedule::plateau) {
      state.plateau_epochs = improved ? 0 : state.plateau_epochs + 1;
      if (state.plateau_epochs >= options.lr_plateau_patience) {
        factor = options.lr_gamma;
        state.plateau_epochs = 0;
      }
    }
    if (factor != 1.0) {
      state.learning_rate *= factor;
      state.encoder_learning_rate *= factor;
      set_learning_rates(*optimizer, state);
      log::info() << "learning rate now " << state.learning_rate;
    }

    save_checkpoint(checkpoints / "last", *model, *optimizer, state, vocabulary, setup.config_yaml);
    if (improved)
      save_checkpoint(checkpoints / "best", *model, *optimizer, state, vocabulary, setup.config_yaml);
    write_run_report(setup.run_dir);
    if (options.early_stopping_patience > 0 &&
        state.epochs_without_improvement >= options.early_stopping_patience) {
      log::info() << "Early stopping: " << options.val_metric << " has not improved for "
                  << state.epochs_without_improvement << " epochs";
      result.stopped_early = true;
      break;
    }
  }

  result.epochs_completed = state.epoch;
  result.steps = state.step;
  result.best_metric = state.best_metric;
  result.best_epoch = state.best_epoch;
  if (test_set->size() > 0 && std::filesystem::exists(checkpoints / "best")) {
    load_checkpoint(checkpoints / "best", *model, nullptr);
    Loader test_loader(test_set, setup.eval_loader, setup.dataset.image);
    std::optional<ShapesEvaluator> shapes;
    if (setup.dataset.kind == "shapes") shapes.emplace(setup.dataset);
    Decoded decoded = decode_split(
        *model, test_loader, test_features.get(), vocabulary, options, 0, shapes ? &*shapes : nullptr);
    if (shapes) result.test_shapes = shapes->scores();
    result.test = score_captions(decoded.references, decoded.candidates, setup.scores);
    auto row = score_row(*result.test);
    row["kind"] = "test";
    row["epoch"] = std::to_string(state.best_epoch);
    row["step"] = std::to_string(state.step);
    log_row(row);
    log::info() << "test (best checkpoint, epoch " << state.best_epoch << "): BLEU-4 " << result.test->bleu[3]
                << ", CIDEr-D " << result.test->cider_d << " (" << decoded.in_order.size() << " images)";
    SplitResults test_results{"test", "greedy", state.best_epoch, {}, decoded.candidates, *result.test, {}};
    for (const auto& sample : decoded.in_order) test_results.image_order.push_back(sample.image_id);
    test_results.shapes = result.test_shapes;
    write_split_results(setup.run_dir / "results", test_results);
    const auto count =
        std::min<size_t>(decoded.in_order.size(), static_cast<size_t>(options.sample_captions));
    result.samples.assign(decoded.in_order.begin(), decoded.in_order.begin() + count);
    if (setup.viz.sample_images > 0) {
      const std::vector<SampleOverlay> overlays = write_sample_overlays(
          *model, vocabulary, *test_set, setup.viz.sample_images, setup.dataset.image,
          greedy_options(options), setup.viz, setup.run_dir / "samples");
      if (events) log_samples(*events, overlays, state.step);
    }
    write_run_report(setup.run_dir);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace saccade
