// A trained run loaded once: the saved config over today's defaults with the caller's overrides
// on top, the run's group choices, the checkpoint's weights, and one-line errors.
#include "decode/trained_run.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <torch/optim/adam.h>

#include "io/log.h"
#include "models/checkpoint.h"
#include "test_util.h"

namespace saccade {
namespace {

using testing::read_file;
using testing::source_dir;
using testing::TempDir;
using testing::write_file;

// Today's configs, with `overrides`.
ComposeRequest today(std::vector<std::string> overrides = {}) {
  return ComposeRequest{source_dir() / "configs", "config", std::move(overrides)};
}

class TrainedRunTest : public ::testing::Test {
 protected:
  TrainedRunTest() { torch::manual_seed(0); }

  // The smoke experiment's config (with `overrides`) as a run saves it, passed through `edit`, with
  // a checkpoint of a model built from the unedited config in <run>/checkpoints/best (epoch 3).
  void write_run(
      const std::function<void(YAML::Node&)>& edit = {}, const std::vector<std::string>& overrides = {}) {
    std::vector<std::string> smoke = {"experiment=smoke", "dataset.root=" + (dir_ / "data").string()};
    smoke.insert(smoke.end(), overrides.begin(), overrides.end());
    const Composition composition = compose(today(smoke));
    EncoderOptions encoder = encoder_options_from(composition.config);
    model_ = build_captioner(encoder, decoder_options_from(composition.config), vocabulary_.size());
    torch::optim::Adam optimizer(model_->parameters(), torch::optim::AdamOptions(1e-3));
    YAML::Node saved = YAML::Load(composition.config.to_yaml(true));
    if (edit) edit(saved);
    YAML::Emitter yaml;
    yaml << saved;
    TrainState state;
    state.epoch = 3;
    save_checkpoint(dir_ / "checkpoints/best", *model_, optimizer, state, vocabulary_, yaml.c_str());
  }

  // A two-head Transformer run whose run.yaml chose decoder=transformer.
  void write_transformer_run() {
    write_run(
        {}, {"decoder=transformer", "decoder.layers=1", "decoder.heads=2", "decoder.dim=16",
             "decoder.ffn_dim=32"});
    write_file(dir_ / "run.yaml", "choices:\n  decoder: transformer\n  experiment: smoke\n");
  }

  // The one-line ConfigError loading the run with `overrides` throws ("" and a failure if none).
  std::string refusal(const std::vector<std::string>& overrides) {
    const std::string message =
        testing::message_of<ConfigError>([&] { load_trained_run(dir_.path(), today(overrides)); });
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }

  // The refusal of `key`=`given` on this run, which has `key`=`trained`.
  std::string architecture_refusal(
      const std::string& key, const std::string& given, const std::string& trained) {
    return key + "=" + given + " changes the model of the trained run " + dir_.path().string() +
           ", which has " + key + "=" + trained + "; a trained run's architecture keys cannot be overridden";
  }

  TempDir dir_;
  Vocabulary vocabulary_ = Vocabulary(std::vector<std::string>{"a", "red", "circle"});
  Captioner model_{nullptr};
};

TEST_F(TrainedRunTest, LoadsTheCheckpointsWeightsAndTheRunsConfig) {
  write_run();
  const TrainedRun run = load_trained_run(dir_.path(), today());
  EXPECT_EQ(run.checkpoint, dir_ / "checkpoints/best");
  EXPECT_EQ(run.epoch, 3);
  EXPECT_EQ(run.vocabulary.size(), vocabulary_.size());
  EXPECT_EQ(run.config.get<int64_t>("decoder.hidden_dim"), 32);  // smoke's, not today's default 512
  EXPECT_EQ(run.dataset.root, dir_ / "data");
  EXPECT_FALSE(run.model->is_training());
  const auto expected = model_->named_parameters();
  for (const auto& parameter : run.model->named_parameters()) {
    EXPECT_TRUE(torch::equal(parameter.value(), expected[parameter.key()])) << parameter.key();
  }
}

TEST_F(TrainedRunTest, KeysSavedBeforeTheyExistedGetTodaysDefaultsAndRetiredKeysAreNamed) {
  write_run([](YAML::Node& saved) {
    saved["decoder"]["attention"].remove("hard_expectation");
    saved["decode"].remove("hard_read");
    saved["train"]["retired_option"] = 7;
  });
  const auto log_file = dir_ / "load.log";
  log::set_file(log_file);
  const TrainedRun run = load_trained_run(dir_.path(), today());
  log::set_file("");
  EXPECT_EQ(run.config.get<double>("decoder.attention.hard_expectation"), 0.5);
  EXPECT_EQ(run.search.hard_read, HardRead::argmax);
  EXPECT_EQ(run.config.get<int64_t>("train.retired_option"), 7);
  const std::string log = read_file(log_file);
  EXPECT_NE(log.find("'train.retired_option' is not in today's configs"), std::string::npos) << log;
  EXPECT_EQ(log.find("hard_expectation"), std::string::npos) << log;
}

TEST_F(TrainedRunTest, TheCallersOverridesWinOverTheSavedConfig) {
  write_run();
  const TrainedRun run =
      load_trained_run(dir_.path(), today({"decode.hard_read=expectation", "decode.beam_size=4"}));
  EXPECT_EQ(run.search.hard_read, HardRead::expectation);
  EXPECT_EQ(run.search.beam_size, 4);
  EXPECT_EQ(run.config.get<int64_t>("decode.beam_size"), 4);
}

TEST_F(TrainedRunTest, TheRunsGroupChoicesFillWhatItsConfigLacks) {
  // A hard-attention run whose saved config lacks the mode: its run.yaml chose decoder=hard.
  write_run([](YAML::Node& saved) { saved["decoder"]["attention"].remove("mode"); });
  write_file(dir_ / "run.yaml", "choices:\n  dataset: shapes\n  decoder: hard\n  experiment: smoke\n");
  EXPECT_EQ(
      load_trained_run(dir_.path(), today()).model->decoder->options().attention_mode, AttentionMode::hard);
  write_file(dir_ / "run.yaml", "choices:\n  decoder: soft\n");
  EXPECT_EQ(
      load_trained_run(dir_.path(), today()).model->decoder->options().attention_mode, AttentionMode::soft);
}

// Overrides that keep every weight's shape but change what the model computes would load and
// caption with another model: refused, naming the key and both values.
TEST_F(TrainedRunTest, ArchitectureKeysOfTheRunCannotBeOverridden) {
  write_run();
  EXPECT_EQ(
      refusal({"encoder.position=sinusoidal"}),
      architecture_refusal("encoder.position", "sinusoidal", "none"));
  EXPECT_EQ(refusal({"encoder.grid=[4,4]"}), architecture_refusal("encoder.grid", "[4, 4]", "[8, 8]"));
  EXPECT_EQ(
      refusal({"decode.beam_size=2", "decoder.attention.mode=hard"}),
      architecture_refusal("decoder.attention.mode", "hard", "soft"));
  // Values equal to the run's, and what only training or drawing reads, are no change.
  EXPECT_NO_THROW(load_trained_run(dir_.path(), today({"encoder.grid=[8,8]", "decoder.dropout=0.1"})));

  write_transformer_run();
  EXPECT_EQ(refusal({"decoder.heads=1"}), architecture_refusal("decoder.heads", "1", "2"));
  // Another weight layout names the override, not the checkpoint.
  EXPECT_EQ(refusal({"decoder.layers=2"}), architecture_refusal("decoder.layers", "2", "1"));
  EXPECT_EQ(refusal({"decoder.kind=lstm"}), architecture_refusal("decoder.kind", "lstm", "transformer"));
  EXPECT_EQ(
      load_trained_run(dir_.path(), today({"decoder.maps_layer=0"}))
          .model->decoder->options()
          .transformer.maps_layer,
      0);
}

// The saved config is merged over the group's values, so a switched group would be ignored.
TEST_F(TrainedRunTest, AGroupSwitchOfTheRunIsRefused) {
  write_transformer_run();
  EXPECT_EQ(
      refusal({"decoder=soft"}), "decoder=soft: the trained run " + dir_.path().string() +
                                     " is composed with decoder=transformer; a trained run's config groups "
                                     "cannot be switched (its saved config decides the model)");
  EXPECT_NO_THROW(load_trained_run(dir_.path(), today({"decoder=transformer"})));
}

TEST_F(TrainedRunTest, WeightsThatDoNotFitAreOneLine) {
  write_run([](YAML::Node& saved) { saved["decoder"]["hidden_dim"] = 40; });
  try {
    load_trained_run(dir_.path(), today());
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_EQ(
        message.rfind("The checkpoint " + (dir_ / "checkpoints/best").string() + " does not match", 0), 0u)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_THROW(load_trained_run(dir_ / "elsewhere", today()), std::runtime_error);
}

}  // namespace
}  // namespace saccade
