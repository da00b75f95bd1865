// train.init_from and train.resume against a checkpoint written here: the architecture keys come
// from the options readers, and a run that differs in one (weight shapes alike or not) is refused
// in one line naming the key and both values.
#include "train/warm_start.h"

#include <gtest/gtest.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "models/architecture_keys.h"
#include "models/captioner.h"
#include "models/checkpoint.h"
#include "test_util.h"

namespace saccade {
namespace {

using testing::message_of;
using testing::TempDir;

class WarmStartTest : public ::testing::Test {
 protected:
  WarmStartTest() { torch::manual_seed(0); }

  // The smoke experiment's config with `overrides`, resolved.
  static Config smoke_config(std::vector<std::string> overrides) {
    overrides.insert(overrides.begin(), "experiment=smoke");
    return compose({testing::configs(), "config", overrides}).config;
  }

  static Captioner model_of(const Config& config, const Vocabulary& vocabulary) {
    return build_captioner(encoder_options_from(config), decoder_options_from(config), vocabulary.size());
  }

  // A run trained with `overrides` of the smoke config: its checkpoints/best and /last.
  void write_source_run(const std::vector<std::string>& overrides) {
    const Config config = smoke_config(overrides);
    Captioner model = model_of(config, vocabulary_);
    torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(1e-3));
    for (const char* name : {"best", "last"})
      save_checkpoint(
          source_ / "checkpoints" / name, *model, optimizer, TrainState{}, vocabulary_, config.to_yaml(true));
  }

  // What train.init_from says, or "" when it loads, for a run configured with `overrides`.
  std::string init_from_refusal(const std::vector<std::string>& overrides) {
    const Config config = smoke_config(overrides);
    Captioner model = model_of(config, vocabulary_);
    try {
      initialize_from(source_.path(), *model, vocabulary_, config.to_yaml(true));
    } catch (const std::invalid_argument& error) {
      return error.what();
    }
    return "";
  }

  static bool contains(const std::vector<std::string>& keys, const std::string& key) {
    return std::find(keys.begin(), keys.end(), key) != keys.end();
  }

  TempDir source_;
  Vocabulary vocabulary_ = Vocabulary(std::vector<std::string>{"a", "red", "circle"});
};

// The readers decide the list: the keys each decoder kind reads that shape the model, never the
// ones that act only in training or in drawing.
TEST_F(WarmStartTest, ArchitectureKeysAreTheShapingKeysTheReadersRead) {
  const auto lstm = architecture_keys(smoke_config({}));
  for (const char* key :
       {"encoder.name", "encoder.grid", "encoder.position", "encoder.channels", "encoder.refiner.kind",
        "decoder.kind", "decoder.hidden_dim", "decoder.attention.kind", "decoder.attention.dim",
        "decoder.attention.mode", "decoder.attention.coverage", "decoder.gate", "decoder.deep_output"})
    EXPECT_TRUE(contains(lstm, key)) << key;
  // What acts only in training, and the options of a refiner or attention kind the model has not.
  for (const char* key :
       {"encoder.weights", "encoder.trainable_blocks", "encoder.refiner.heads", "decoder.dropout",
        "decoder.attention.hard_expectation", "decoder.attention.window", "decoder.attention.heads",
        "decoder.heads", "decode.beam_size"})
    EXPECT_FALSE(contains(lstm, key)) << key;

  const auto refined_local = architecture_keys(smoke_config(
      {"encoder.refiner.kind=transformer", "decoder.attention.kind=local", "decoder.attention.window=1"}));
  for (const char* key :
       {"encoder.refiner.layers", "encoder.refiner.heads", "encoder.refiner.ffn_dim",
        "encoder.refiner.position", "decoder.attention.window", "decoder.attention.centre"})
    EXPECT_TRUE(contains(refined_local, key)) << key;
  EXPECT_FALSE(contains(refined_local, "encoder.refiner.dropout"));

  const auto transformer = architecture_keys(smoke_config({"decoder=transformer"}));
  for (const char* key :
       {"decoder.kind", "decoder.layers", "decoder.heads", "decoder.dim", "decoder.ffn_dim",
        "decoder.tied_embeddings"})
    EXPECT_TRUE(contains(transformer, key)) << key;
  for (const char* key : {"decoder.maps_layer", "decoder.hidden_dim"})
    EXPECT_FALSE(contains(transformer, key)) << key;
}

// Each of these loads without complaint where only weight shapes are compared.
TEST_F(WarmStartTest, InitFromRefusesEveryArchitectureKeyThatDiffers) {
  const std::vector<std::string> refiner = {
      "encoder.refiner.kind=transformer", "encoder.refiner.layers=1", "encoder.refiner.heads=2",
      "encoder.refiner.ffn_dim=32"};
  write_source_run(refiner);
  EXPECT_EQ(init_from_refusal(refiner), "");
  const std::string prefix = "train.init_from=" + source_.path().string() + ": it was trained with ";
  const auto with = [&](const std::string& change) {
    auto overrides = refiner;
    overrides.push_back(change);
    return init_from_refusal(overrides);
  };
  EXPECT_EQ(
      with("encoder.position=sinusoidal"),
      prefix +
          "encoder.position=none, this run has encoder.position=sinusoidal. HINT: set encoder.position=none");
  EXPECT_EQ(
      with("encoder.grid=[4,4]"),
      prefix + "encoder.grid=[8, 8], this run has encoder.grid=[4, 4]. HINT: set encoder.grid=[8, 8]");
  EXPECT_EQ(
      with("encoder.refiner.heads=4"),
      prefix +
          "encoder.refiner.heads=2, this run has encoder.refiner.heads=4. HINT: set encoder.refiner.heads=2");
  // Dropout is no architecture key: a fine-tuning run may change it.
  EXPECT_EQ(with("encoder.refiner.dropout=0.3"), "");
}

TEST_F(WarmStartTest, ResumeRefusesAnotherArchitecture) {
  write_source_run({});
  EXPECT_NO_THROW(check_resumable(source_.path(), smoke_config({}).to_yaml(true)));
  const std::string message = message_of<std::invalid_argument>(
      [&] { check_resumable(source_.path(), smoke_config({"encoder.position=sinusoidal"}).to_yaml(true)); });
  EXPECT_EQ(
      message,
      "train.resume=" + source_.path().string() +
          ": it was trained with encoder.position=none, this run has encoder.position=sinusoidal. HINT: "
          "set encoder.position=none");
}

}  // namespace
}  // namespace saccade
