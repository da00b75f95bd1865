// The Trainer: set-up, optimizer steps, epoch ends (see trainer.h).
#include "train/trainer.h"

#include <torch/nn/utils/clip_grad.h>
#include <torch/utils.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "base/text.h"
#include "config/config.h"
#include "data/rng.h"
#include "decode/decode_split.h"
#include "evaluate/split_evaluation.h"
#include "io/log.h"
#include "io/progress.h"
#include "io/temporaries.h"
#include "models/weights.h"
#include "train/optimizer.h"
#include "train/warm_start.h"

namespace saccade {
namespace {

// The resolved config as a TensorBoard text: four leading spaces make it a markdown code block.
std::string config_markdown(const std::string& config_yaml) {
  std::string text;
  std::istringstream lines(config_yaml);
  for (std::string line; std::getline(lines, line);) text += "    " + line + "\n";
  return text;
}

// A fingerprint of the bits of every parameter and buffer (FNV-1a), for checking that ranks agree.
std::string parameter_digest(const torch::nn::Module& module) {
  uint64_t hash = kFnv1aOffset;
  auto tensors = module.parameters();
  for (const auto& buffer : module.buffers()) tensors.push_back(buffer);
  for (const auto& parameter : tensors) {
    const auto values = parameter.detach().cpu().contiguous();
    hash = fnv1a(values.data_ptr(), values.nbytes(), hash);
  }
  return hex_digest(hash);
}

bool augments(const AugmentOptions& augment) {
  return augment.hflip > 0 || augment.brightness > 0 || augment.contrast > 0;
}

}  // namespace

SearchOptions validation_search(const TrainOptions& train, HardRead hard_read) {
  SearchOptions search;
  search.max_length = train.max_length;
  search.hard_read = hard_read;
  return search;
}

TrainerSetup trainer_setup_from(const Config& config, const std::filesystem::path& run_dir) {
  TrainerSetup setup;
  setup.train = train_options_from(config);
  setup.dataset = dataset_options_from(config);
  setup.train_loader = loader_options_from(config, Split::train, setup.train.batch_size);
  setup.eval_loader = loader_options_from(config, Split::val, setup.train.batch_size);
  setup.encoder = encoder_options_from(config);
  setup.decoder = decoder_options_from(config);
  setup.scores = score_options_from(config);
  setup.validation = validation_search(setup.train, config.get_parsed("decode.hard_read", parse_hard_read));
  setup.config_yaml = config.to_yaml(true);
  setup.run_dir = run_dir;
  validate(setup);
  return setup;
}

// What one optimizer step logs.
struct Trainer::StepLog {
  int64_t images = 0;  // captions (scst: images) of the whole batch (every rank's part)
  double loss = 0.0;
  // xent, alpha_reg (and reinforce, attention_entropy); scst: scst_reward, scst_baseline,
  // sample_words, function_word_endings
  std::map<std::string, torch::Tensor> terms;
  std::optional<double> hard_reward;  // hard attention's mean reward, for its moving baseline
};

void validate(const TrainerSetup& setup) {
  validate(setup.train);
  if (is_shapes_metric(setup.train.val_metric) && setup.dataset.kind != "shapes") {
    throw std::invalid_argument(
        "train.val_metric=" + to_string(setup.train.val_metric) +
        " is a shapes-world metric; this run has dataset.kind=" + setup.dataset.kind);
  }
  validate(setup.dataset);
  validate(setup.train_loader);
  validate(setup.eval_loader);
  validate(setup.encoder);
  // The vocabulary and annotation sizes come from the data and the encoder later.
  DecoderOptions decoder = setup.decoder;
  decoder.vocab_size = std::max<int64_t>(decoder.vocab_size, 1);
  decoder.annotation_dim = std::max<int64_t>(decoder.annotation_dim, 1);
  if (setup.encoder.grid) decoder.grid = *setup.encoder.grid;
  validate(decoder);
  if (setup.encoder.refiner.enabled()) {
    // Its heads must divide the annotation dim, which only the encoder knows: built once, without weights.
    EncoderOptions unweighted = setup.encoder;
    unweighted.weights.reset();
    validate(setup.encoder.refiner, build_encoder(unweighted)->annotation_dim(), decoder.grid);
  }
  validate(setup.validation);
  const TrainOptions& train = setup.train;
  if (train.features && augments(setup.dataset.augment)) {
    throw std::invalid_argument(
        "train.features and dataset.augment cannot be combined: the cached annotations were extracted from "
        "unaugmented images, so no augmentation would reach the model. HINT: set dataset.augment.hflip, "
        "brightness and contrast to 0, or train without train.features");
  }
  if (train.features && setup.encoder.trainable_blocks != 0) {
    throw std::invalid_argument(
        "train.features needs a frozen encoder (encoder.trainable_blocks=0): cached annotations cannot be "
        "fine-tuned");
  }
  if (train.objective == Objective::scst && setup.dataset.augment.hflip > 0) {
    throw std::invalid_argument(
        "train.objective=scst and dataset.augment.hflip cannot be combined: the rewards score captions of "
        "flipped images against unflipped references. HINT: set dataset.augment.hflip=0");
  }
  if (decoder.attention_mode == AttentionMode::hard && train.hard.baseline == HardBaseline::expectation &&
      decoder.lstm.hard_expectation != 0.5) {
    throw std::invalid_argument(
        "train.hard.baseline=expectation decodes every caption once sampled and once reading the expected "
        "context, so it cannot go with decoder.attention.hard_expectation=" +
        MetricsCsv::number(decoder.lstm.hard_expectation) + ". HINT: leave hard_expectation at 0.5");
  }
}

Trainer::Trainer(const TrainerSetup& setup) : setup_(setup), options_(setup_.train) {
  validate(setup_);
  if (ranks() > 1 && !setup_.dataset.cache && setup_.dataset.on_bad_image == BadImagePolicy::skip) {
    throw std::invalid_argument(
        "data.on_bad_image=skip needs data.cache=true on several processes: a rank whose part of a batch was "
        "all bad images would fall out of step with the others. HINT: keep data.cache=true (bad images are "
        "then left out when the cache is built)");
  }
  prepare_data();
  const std::filesystem::path resume_dir =
      options_.resume ? *options_.resume / "checkpoints" / "last" : std::filesystem::path();
  if (options_.resume) {
    check_checkpoint(resume_dir);
    check_resumable(*options_.resume, setup_.config_yaml);
    // What a killed process of that run was writing (a checkpoint, the report, a figure): what it
    // had finished stays as it was.
    remove_stale_temporaries_within(*options_.resume);
  }
  make_datasets(resume_dir);
  build_model(resume_dir);
  if (options_.features) open_features();
  if (ranks() > 1) broadcast_rank0_state();
  make_loaders();
  if (options_.objective == Objective::scst) prepare_self_critical();
  log_setup();
}

void Trainer::prepare_data() {
  // The main rank generates the data and builds its caches first; the others then read them.
  if (ranks() > 1 && rank() != 0) setup_.group->barrier();
  data_ = ensure_prepared(setup_.dataset);
  if (ranks() > 1 && rank() == 0) setup_.group->barrier();
  result_.skipped_images = data_.skipped();
}

void Trainer::make_datasets(const std::filesystem::path& resume_dir) {
  vocabulary_ = options_.resume
                    ? load_checkpoint_vocabulary(resume_dir)
                    : build_vocabulary(data_.train.images, setup_.dataset.vocabulary.min_word_count);
  // SCST samples captions per image and scores them against all of the image's references.
  train_set_ = make_caption_dataset(
      data_.train, vocabulary_, setup_.dataset.vocabulary,
      options_.objective == Objective::scst ? SampleMode::per_image : SampleMode::per_caption);
  val_set_ = make_caption_dataset(data_.val, vocabulary_, setup_.dataset.vocabulary);
}

void Trainer::build_model(const std::filesystem::path& resume_dir) {
  torch::manual_seed(options_.seed);
  model_ = build_captioner(setup_.encoder, setup_.decoder, vocabulary_.size());
  if (options_.init_from && !options_.resume)
    initialize_from(*options_.init_from, *model_, vocabulary_, setup_.config_yaml);
  model_->to(setup_.placement.device);  // parameters are initialized on the CPU, the same everywhere
  optimizer_ = make_optimizer(*model_, options_, setup_.encoder.weights.has_value());
  scaler_ = GradScaler(setup_.placement.precision == Precision::fp16);
  state_.learning_rate = options_.learning_rate;
  state_.encoder_learning_rate = options_.encoder_learning_rate;
  if (!options_.resume) return;
  state_ = load_checkpoint(resume_dir, *model_, optimizer_.get());
  set_learning_rates(*optimizer_, state_);
  if (scaler_.enabled() && state_.loss_scale)
    scaler_.set_state({*state_.loss_scale, state_.loss_scale_good_steps});
  log::info() << "Resuming " << options_.resume->string() << " after epoch " << state_.epoch << " (step "
              << state_.step << ")";
}

void Trainer::open_features() {
  const auto annotations = describe_annotations(setup_.encoder, setup_.dataset.image);
  train_features_ = open_split_features(*options_.features, Split::train, data_.train.images, annotations);
  val_features_ = open_split_features(*options_.features, Split::val, data_.val.images, annotations);
  log::info() << "Annotations from the feature cache " << options_.features->string()
              << ": the encoder does not run";
}

void Trainer::make_loaders() {
  LoaderOptions train_loader = setup_.train_loader;
  train_loader.shard = rank();
  train_loader.shards = ranks();
  train_loader_ = std::make_unique<Loader>(
      train_set_, train_loader, setup_.dataset.image, make_augmentation(setup_.dataset.augment, vocabulary_));
  val_loader_ = std::make_unique<Loader>(val_set_, setup_.eval_loader, setup_.dataset.image);
  validation_search_ = make_caption_search(setup_.validation);
}

void Trainer::log_setup() {
  if (EventWriter* events = setup_.log ? setup_.log->events() : nullptr)
    events->add_text("config", config_markdown(setup_.config_yaml), state_.step);
  log::info() << "Training on "
              << (options_.objective == Objective::scst
                      ? std::to_string(options_.scst.samples) + " sampled captions of each of"
                      : std::to_string(train_set_->size()) + " captions of")
              << " " << data_.train.images.size() << " images; validating on " << val_set_->size()
              << " images; vocabulary " << vocabulary_.size() << " words; " << parameter_count(*model_)
              << " parameters; on " << describe(setup_.placement);
}

Trainer::~Trainer() = default;

void Trainer::broadcast_rank0_state() {
  // They already agree when all ranks start from one seed or checkpoint; this makes it so.
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> state;
  for (const auto& parameter : model_->parameters()) state.push_back(parameter.data());
  for (const auto& buffer : model_->buffers()) state.push_back(buffer.data());
  setup_.group->broadcast(state);
}

void Trainer::prepare_self_critical() {
  // Document frequencies of the training references, with <end> as a word or not (scst.h).
  std::vector<std::vector<Tokens>> corpus;
  corpus.reserve(data_.train.images.size());
  for (const auto& image : data_.train.images) {
    auto& references = corpus.emplace_back();
    for (const auto& caption : image.captions)
      references.push_back(reward_tokens(caption.words, true, options_.scst.count_end));
  }
  scst_reward_ = std::make_unique<CiderD>(corpus);
  scst_search_.method = SearchMethod::sample;
  scst_search_.max_length = options_.max_length;
}

TrainResult Trainer::run() {
  const auto started = std::chrono::steady_clock::now();
  model_->train();
  for (int64_t epoch = state_.epoch + 1; epoch <= options_.epochs; ++epoch) {
    train_epoch(epoch);
    if (end_epoch(epoch)) {
      result_.stopped_early = true;
      break;
    }
  }
  if (setup_.group) setup_.group->barrier();  // the main rank's checkpoints are written
  result_.epochs_completed = state_.epoch;
  result_.steps = state_.step;
  result_.best_metric = state_.best_metric;
  result_.best_epoch = state_.best_epoch;
  result_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // Without an image cache the loaders meet the bad images.
  add_distinct(result_.skipped_images, train_loader_->skipped());
  add_distinct(result_.skipped_images, val_loader_->skipped());
  return result_;
}

void Trainer::train_epoch(int64_t epoch) {
  // Dropout and hard-attention samples differ between ranks; rank 0 draws what one process draws.
  const uint64_t epoch_seed = mix_seed({options_.seed, static_cast<uint64_t>(epoch)});
  torch::manual_seed(rank() == 0 ? epoch_seed : mix_seed({epoch_seed, static_cast<uint64_t>(rank())}));
  train_loader_->start_epoch(epoch);
  int64_t steps_this_epoch = train_loader_->batches_per_epoch();
  if (options_.max_steps_per_epoch > 0)
    steps_this_epoch = std::min(steps_this_epoch, options_.max_steps_per_epoch);
  ProgressBar progress(steps_this_epoch * options_.batch_size, "epoch " + std::to_string(epoch), "img");
  for (int64_t epoch_steps = 0; epoch_steps < steps_this_epoch;) {
    std::optional<Batch> batch = train_loader_->next();
    if (!batch) break;
    const StepLog logged = step(*batch, epoch);
    ++epoch_steps;
    progress.advance(logged.images, {{"loss", logged.loss}});
    if (state_.step % options_.log_every != 0 && epoch_steps != steps_this_epoch) continue;
    std::map<std::string, std::string> row;
    for (const auto& [name, value] : logged.terms) row[name] = MetricsCsv::number(value.item<double>());
    row["kind"] = "train";
    row["epoch"] = std::to_string(epoch);
    row["step"] = std::to_string(state_.step);
    row["loss"] = MetricsCsv::number(logged.loss);
    row["lr"] = MetricsCsv::number(state_.learning_rate);
    row["images_per_s"] = MetricsCsv::number(progress.rate());
    write_row(row);
  }
  progress.finish();
}

torch::Tensor Trainer::xent_objective(const Batch& batch, StepLog& logged) {
  const auto device = setup_.placement.device;
  // Hard attention's soft epochs: every caption reads the expected context. After them every
  // caption is decoded `copies` times, rows [k B, (k+1) B) the k-th: with the expectation baseline
  // twice, rows [0, B) sampling their locations and rows [B, 2B) reading the expected context as
  // their baseline; otherwise train.hard.samples times, each sampling its own.
  const bool hard_mode = model_->decoder->options().attention_mode == AttentionMode::hard;
  const bool soft_epoch = hard_mode && state_.epoch < options_.hard.soft_epochs;
  const bool sampling = hard_mode && !soft_epoch;
  const bool paired = sampling && options_.hard.baseline == HardBaseline::expectation;
  const int64_t copies = paired ? 2 : sampling ? options_.hard.samples : 1;
  const auto repeated = [&](const torch::Tensor& x) {
    return copies == 1 ? x : torch::cat(std::vector<torch::Tensor>(static_cast<size_t>(copies), x));
  };
  const auto tokens = repeated(batch.tokens.to(device, /*non_blocking=*/true));
  // Inputs are <start> w1 .. wn, targets w1 .. wn <end>: the same row shifted by one.
  const auto inputs = tokens.slice(1, 0, -1);                                        // [B, T-1]
  const auto targets = tokens.slice(1, 1);                                           // [B, T-1]
  const auto steps = repeated(batch.lengths.to(device, /*non_blocking=*/true) - 1);  // [B]
  const auto expectation_rows = paired ? torch::arange(steps.size(0), steps.options()) >= batch.size()
                                : soft_epoch
                                    ? torch::ones({batch.size()}, steps.options().dtype(torch::kBool))
                                    : torch::Tensor();
  std::optional<SoftAttentionLoss> loss;
  std::optional<HardAttentionTerms> hard;
  {
    const Autocast autocast(setup_.placement);  // the forward pass and the objective; backward outside
    const auto annotations = repeated(annotations_of(*model_, batch, *train_set_, train_features_.get()));
    const DecoderOutput output =
        model_->decoder->forward(annotations, inputs, steps, {}, HardRead::argmax, expectation_rows);
    loss = soft_attention_loss(
        output.logits, targets, steps, output.alphas, options_.alpha_reg, options_.xent_reduction);
    if (output.weights.defined()) {
      const auto word_log_likelihood = -loss->word_nll;  // [B, T]
      const auto baseline_words = paired ? word_log_likelihood.roll(batch.size(), 0)
                                  : sampling && options_.hard.baseline == HardBaseline::mean
                                      ? mean_of_other_samples(word_log_likelihood, copies)
                                      : torch::Tensor();
      hard = hard_attention_terms(
          word_log_likelihood, output.alphas, output.weights, output.expectation_rows, steps,
          state_.reinforce_baseline, options_.hard, baseline_words);
    }
  }
  torch::Tensor total = hard ? loss->total + hard->loss : loss->total;
  logged.terms = {{"xent", loss->xent}, {"alpha_reg", loss->alpha_reg}};
  if (hard) {
    logged.terms["reinforce"] = hard->reinforce;
    logged.terms["attention_entropy"] = hard->entropy;
  }
  logged.hard_reward = hard ? hard->reward : std::nullopt;
  if (ranks() == 1) return total;
  // The whole batch's counts: captions, target tokens, sampled captions and their summed reward.
  const int64_t sampled = hard ? hard->sampled_captions : 0;
  auto counts = torch::tensor(
      {static_cast<double>(batch.size()), static_cast<double>(loss->tokens), static_cast<double>(sampled),
       logged.hard_reward ? *logged.hard_reward * static_cast<double>(sampled) : 0.0},
      torch::kDouble);
  setup_.group->all_reduce_sum({counts});
  const auto count = counts.accessor<double, 1>();
  logged.images = static_cast<int64_t>(count[0]);
  // The cross-entropy averages over captions or tokens, the other terms over captions.
  const double caption_share = static_cast<double>(batch.size()) / count[0];
  const double xent_share = options_.xent_reduction == XentReduction::per_caption
                                ? caption_share
                                : static_cast<double>(loss->tokens) / std::max(1.0, count[1]);
  logged.hard_reward = count[2] > 0 ? std::optional<double>(count[3] / count[2]) : std::nullopt;
  total = xent_share * loss->xent + caption_share * loss->alpha_reg;
  if (hard) total = total + caption_share * hard->loss;
  sum_over_ranks(
      total, logged, [&](const std::string& term) { return term == "xent" ? xent_share : caption_share; });
  return total;
}

torch::Tensor Trainer::scst_objective(const Batch& batch, StepLog& logged) {
  const int64_t samples = options_.scst.samples;
  SampledCaptions sampled;
  std::vector<DecodedCaption> greedy;
  {
    const Autocast autocast(setup_.placement);
    const auto annotations = annotations_of(*model_, batch, *train_set_, train_features_.get());  // [B, L, D]
    sampled = sample_captions(*model_->decoder, annotations.repeat_interleave(samples, 0), scst_search_);
    if (options_.scst.baseline == ScstBaseline::greedy)
      greedy = validation_search_->search(*model_->decoder, annotations.detach());
  }
  const ScstRewards scored = score_samples(
      *scst_reward_, sampled, greedy, batch.references, options_.scst,
      [&](const std::vector<int64_t>& ids) { return vocabulary_.decode(ids); });
  const ScstTerms terms = scst_terms(sampled, scored.rewards, scored.baselines);
  std::vector<std::vector<std::string>> sampled_words;
  double words = 0.0;
  for (const auto& ids : sampled.words) {
    sampled_words.push_back(vocabulary_.decode(ids));
    words += static_cast<double>(ids.size());
  }
  const auto number = [](double value) { return torch::tensor(value, torch::kDouble); };
  logged.terms = {
      {"scst_reward", number(terms.reward)},
      {"scst_baseline", number(terms.baseline)},
      {"sample_words", number(words / static_cast<double>(sampled_words.size()))},
      {"function_word_endings",
       number(function_word_ending_share(sampled_words, options_.scst.function_words))}};
  if (ranks() == 1) return terms.loss;
  auto images = torch::tensor({static_cast<double>(batch.size())}, torch::kDouble);
  setup_.group->all_reduce_sum({images});
  logged.images = static_cast<int64_t>(images.item<double>());
  const double share = static_cast<double>(batch.size()) / images.item<double>();
  const torch::Tensor total = share * terms.loss;
  sum_over_ranks(total, logged, [&](const std::string&) { return share; });
  return total;
}

Trainer::StepLog Trainer::step(const Batch& batch, int64_t epoch) {
  StepLog logged;
  logged.images = batch.size();
  const torch::Tensor total =
      options_.objective == Objective::scst ? scst_objective(batch, logged) : xent_objective(batch, logged);
  if (ranks() == 1) logged.loss = total.item<double>();
  if (!std::isfinite(logged.loss) && scaler_.skip_overflowed_loss()) {
    log::debug() << "step " << state_.step + 1 << " skipped: the fp16 loss overflowed at loss scale "
                 << scaler_.state().scale;
    scaler_.update();
    ++state_.step;
    return logged;
  }
  if (!std::isfinite(logged.loss)) {
    // This run's checkpoints/last once it has finished an epoch; before that, the resumed run's.
    const std::filesystem::path last = last_checkpoint_.empty() && options_.resume
                                           ? *options_.resume / "checkpoints" / "last"
                                           : last_checkpoint_;
    throw std::runtime_error(
        "The loss became " + std::string(std::isnan(logged.loss) ? "NaN" : "infinite") + " at epoch " +
        std::to_string(epoch) + ", step " + std::to_string(state_.step + 1) + "; training stopped. " +
        (last.empty() ? std::string("No checkpoint was written: it diverged in the first epoch")
                      : "The last good checkpoint is " + last.string() + " (epoch " +
                            std::to_string(state_.epoch) + ")") +
        ". HINT: lower train.lr or set train.grad_clip");
  }
  optimizer_->zero_grad();
  scaler_.scale(total).backward();
  if (ranks() > 1) sum_gradients(*setup_.group, model_->parameters());
  // Every rank holds the same summed gradients, so every rank skips the same overflowing steps.
  if (scaler_.unscale(model_->parameters())) {
    if (options_.grad_clip > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), options_.grad_clip);
    optimizer_->step();
  } else {
    log::debug() << "step " << state_.step + 1 << " skipped: fp16 gradients overflowed at loss scale "
                 << scaler_.state().scale;
  }
  scaler_.update();
  if (logged.hard_reward) {
    const double decay = options_.hard.baseline_decay;
    state_.reinforce_baseline = state_.reinforce_baseline
                                    ? decay * *state_.reinforce_baseline + (1.0 - decay) * *logged.hard_reward
                                    : *logged.hard_reward;
  }
  ++state_.step;
  return logged;
}

void Trainer::sum_over_ranks(
    const torch::Tensor& total, StepLog& logged, const std::function<double(const std::string&)>& share) {
  // On the CPU: a few numbers go through the CPU's process group, whatever the device.
  std::vector<torch::Tensor> terms = {total.detach().to(torch::kCPU, torch::kDouble).reshape({1})};
  for (auto& [name, value] : logged.terms) {
    value = share(name) * value.detach().to(torch::kCPU, torch::kDouble);
    terms.push_back(value.reshape({1}));
  }
  auto summed = torch::cat(terms);
  setup_.group->all_reduce_sum({summed});
  logged.loss = summed[0].item<double>();
  int64_t i = 1;
  for (auto& entry : logged.terms) entry.second = summed[i++];
}

void Trainer::write_row(const std::map<std::string, std::string>& row) {
  if (setup_.log) setup_.log->write(row, state_.step);
}

bool Trainer::end_epoch(int64_t epoch) {
  check_unchanged(data_);  // scores of a dataset changed under the run would mean nothing
  DecodeSplitOptions decode;
  decode.max_images = options_.val_max_images;
  decode.features = val_features_.get();
  decode.group = setup_.group;
  decode.precision = setup_.placement.precision;
  decode.seed = options_.seed;
  if (ranks() > 1) {
    // BatchNorm statistics that trained follow each rank's part of the batches: every rank
    // validates with rank 0's, the ones the checkpoint keeps.
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> buffers;
    for (const auto& buffer : model_->buffers()) buffers.push_back(buffer.data());
    setup_.group->broadcast(buffers);
  }
  const MeasuredSplit measured = measure_split(
      *model_, *val_loader_, *validation_search_, vocabulary_, decode,
      setup_.dataset.kind == "shapes" ? &setup_.dataset : nullptr);
  const DecodedSplit& decoded = measured.decoded;
  // The main rank scores (METEOR runs once) and tells the others the metric that decides.
  if (rank() == 0)
    result_.last_validation =
        score_captions(decoded.references, decoded.candidates, setup_.scores, decoded.image_order);
  result_.last_validation_shapes = measured.shapes;
  auto row = score_row(result_.last_validation, result_.last_validation_shapes);
  row["kind"] = "val";
  row["epoch"] = std::to_string(epoch);
  row["step"] = std::to_string(state_.step);
  row["lr"] = MetricsCsv::number(state_.learning_rate);
  write_row(row);
  if (rank() == 0) {
    log::info() << "epoch " << epoch << " validation: BLEU-4 " << result_.last_validation.bleu[3]
                << ", CIDEr-D " << result_.last_validation.cider_d
                << (measured.shapes ? ", " + summarize(*measured.shapes) : std::string()) << " ("
                << decoded.image_order.size() << " images)";
  }

  state_.epoch = epoch;
  const std::optional<double> metric = validation_metric();
  // The first epoch is the best so far whatever it scores; after it, only a higher value.
  const bool improved =
      state_.best_epoch == 0 || (metric && (!state_.best_metric || *metric > *state_.best_metric));
  if (improved) {
    state_.best_metric = metric;
    state_.best_epoch = epoch;
    state_.epochs_without_improvement = 0;
  } else {
    ++state_.epochs_without_improvement;
  }
  // The learning-rate schedule, applied from the next epoch on.
  const double factor = schedule_factor(options_, epoch, improved, state_);
  if (factor != 1.0) {
    state_.learning_rate *= factor;
    state_.encoder_learning_rate *= factor;
    set_learning_rates(*optimizer_, state_);
    log::info() << "learning rate now " << state_.learning_rate;
  }

  if (ranks() > 1) log::info() << "epoch " << epoch << " parameters " << parameter_digest(*model_);
  if (scaler_.enabled()) {
    state_.loss_scale = scaler_.state().scale;
    state_.loss_scale_good_steps = scaler_.state().good_steps;
  }
  if (rank() == 0) {
    const auto checkpoints = setup_.run_dir / "checkpoints";
    save_checkpoint(checkpoints / "last", *model_, *optimizer_, state_, vocabulary_, setup_.config_yaml);
    if (improved)
      save_checkpoint(checkpoints / "best", *model_, *optimizer_, state_, vocabulary_, setup_.config_yaml);
    if (setup_.on_epoch_end) setup_.on_epoch_end();
  }
  last_checkpoint_ = setup_.run_dir / "checkpoints" / "last";  // on every rank, for the messages
  if (options_.early_stopping_patience == 0 ||
      state_.epochs_without_improvement < options_.early_stopping_patience)
    return false;
  log::info() << "Early stopping: " << to_string(options_.val_metric) << " has not improved for "
              << state_.epochs_without_improvement << " epochs";
  return true;
}

std::optional<double> Trainer::validation_metric() {
  std::optional<double> metric =
      metric_value(result_.last_validation, result_.last_validation_shapes, options_.val_metric);
  if (ranks() == 1) return metric;
  // The main rank's value, for every rank; NaN carries "no value".
  auto shared = torch::tensor({metric.value_or(std::numeric_limits<double>::quiet_NaN())}, torch::kDouble);
  setup_.group->broadcast({shared});
  const double value = shared.item<double>();
  return std::isnan(value) ? std::nullopt : std::optional<double>(value);
}

}  // namespace saccade
