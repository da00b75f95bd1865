// Checkpoints: round trip of weights, optimizer state and progress; atomic replacement.
#include "models/checkpoint.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"

namespace saccade {
namespace {

struct Tiny : torch::nn::Module {
  Tiny() {
    linear = register_module("linear", torch::nn::Linear(3, 2));
    norm = register_module("norm", torch::nn::BatchNorm1d(2));
  }
  torch::Tensor forward(const torch::Tensor& x) { return norm(linear(x)); }
  torch::nn::Linear linear{nullptr};
  torch::nn::BatchNorm1d norm{nullptr};
};

// Takes one Adam step so the optimizer has state worth saving.
void train_one_step(Tiny& model, torch::optim::Adam& optimizer) {
  optimizer.zero_grad();
  model.forward(torch::randn({4, 3})).pow(2).sum().backward();
  optimizer.step();
}

TEST(Checkpoint, RoundTripsWeightsOptimizerAndState) {
  torch::manual_seed(0);
  testing::TempDir dir;
  Tiny model;
  torch::optim::Adam optimizer(model.parameters(), torch::optim::AdamOptions(0.1));
  train_one_step(model, optimizer);
  TrainState state;
  state.epoch = 3;
  state.step = 120;
  state.learning_rate = 0.1 / 3;  // not exactly representable in few digits
  state.encoder_learning_rate = 1e-5;
  state.best_metric = 0.123456789012345;
  state.best_epoch = 2;
  state.epochs_without_improvement = 1;
  state.reinforce_baseline = -12.345678901234567;
  state.loss_scale = 16384.0;
  state.loss_scale_good_steps = 17;
  const Vocabulary vocabulary({"red", "circle"});
  save_checkpoint(dir / "last", model, optimizer, state, vocabulary, "seed: 1\n");

  torch::manual_seed(1);
  Tiny restored;
  torch::optim::Adam restored_optimizer(restored.parameters(), torch::optim::AdamOptions(0.1));
  const TrainState loaded = load_checkpoint(dir / "last", restored, &restored_optimizer);
  EXPECT_TRUE(loaded == state);
  EXPECT_EQ(load_checkpoint_vocabulary(dir / "last"), vocabulary);
  EXPECT_EQ(testing::read_file(dir / "last/config.yaml"), "seed: 1\n");
  const auto a = model.named_parameters();
  const auto b = restored.named_parameters();
  for (const auto& item : a) EXPECT_TRUE(torch::equal(item.value(), b[item.key()])) << item.key();
  EXPECT_TRUE(torch::equal(model.norm->running_mean, restored.norm->running_mean));

  // Same optimizer state: one more identical step keeps the two models identical.
  torch::manual_seed(7);
  train_one_step(model, optimizer);
  torch::manual_seed(7);
  train_one_step(restored, restored_optimizer);
  for (const auto& item : model.named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), restored.named_parameters()[item.key()])) << item.key();
  }
}

TEST(Checkpoint, ReplacesAnExistingCheckpointWhole) {
  testing::TempDir dir;
  Tiny model;
  torch::optim::Adam optimizer(model.parameters(), torch::optim::AdamOptions(0.1));
  TrainState first;
  first.epoch = 1;
  save_checkpoint(dir / "last", model, optimizer, first, Vocabulary(), "a: 1\n");
  TrainState second;
  second.epoch = 2;
  save_checkpoint(dir / "last", model, optimizer, second, Vocabulary(), "a: 2\n");
  Tiny restored;
  EXPECT_EQ(load_checkpoint(dir / "last", restored, nullptr).epoch, 2);
  EXPECT_EQ(testing::read_file(dir / "last/config.yaml"), "a: 2\n");
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1);  // no staged folder left behind
}

TEST(Checkpoint, MissingOrIncompleteCheckpointIsClearError) {
  testing::TempDir dir;
  Tiny model;
  try {
    load_checkpoint(dir / "nothing", model, nullptr);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("No checkpoint at"), std::string::npos) << error.what();
  }
  testing::write_file(dir / "partial/model.safetensors", "");
  try {
    check_checkpoint(dir / "partial");
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("missing optimizer.pt"), std::string::npos) << error.what();
  }
  // A torn optimizer.pt (a copy cut short) is named in one line.
  torch::optim::Adam optimizer(model.parameters(), torch::optim::AdamOptions(0.1));
  save_checkpoint(dir / "torn", model, optimizer, TrainState{}, Vocabulary({"red"}), "seed: 1\n");
  const std::string bytes = testing::read_file(dir / "torn/optimizer.pt");
  testing::write_file(dir / "torn/optimizer.pt", bytes.substr(0, bytes.size() / 2));
  try {
    load_checkpoint(dir / "torn", model, &optimizer);
    FAIL() << "a torn optimizer.pt was read";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("Could not read " + (dir / "torn/optimizer.pt").string() + ": ", 0), 0u)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace saccade
