#include "io/train_state.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test_util.h"

namespace saccade {
namespace {

// state.json's numbers are checked on reading: each bad one is named, with the file, in one line.
TEST(Checkpoint, StateOutOfRangeIsNamed) {
  testing::TempDir dir;
  TrainState state;
  state.epoch = 4;
  state.step = 400;
  state.learning_rate = 1e-3;
  state.best_metric = 0.25;
  state.best_epoch = 3;
  state.epochs_without_improvement = 1;
  state.loss_scale = 65536.0;
  const auto file = dir / "state.json";
  write_train_state(file, state);
  EXPECT_EQ(read_train_state(file), state);
  const std::string good = testing::read_file(file);
  struct Case {
    std::string written, damaged, message;
  };
  const std::vector<Case> cases = {
      {"\"epoch\": 4", "\"epoch\": -1", "'epoch' must be a count of 0 or more, got -1"},
      {"\"learning_rate\": 0.001", "\"learning_rate\": -0.5",
       "'learning_rate' must be a number from 0, got -0.5"},
      {"\"best_epoch\": 3", "\"best_epoch\": 5",
       "'best_epoch' must be a count from 0 to the epochs completed, 4, got 5"},
      {"\"epochs_without_improvement\": 1", "\"epochs_without_improvement\": 9",
       "'epochs_without_improvement' must be a count from 0 to the epochs completed, 4, got 9"},
      {"\"loss_scale\": 65536.0", "\"loss_scale\": 0", "'loss_scale' must be a number above 0, got 0"},
  };
  for (const Case& bad : cases) {
    const size_t at = good.find(bad.written);
    ASSERT_NE(at, std::string::npos) << bad.written << " in " << good;
    testing::write_file(file, good.substr(0, at) + bad.damaged + good.substr(at + bad.written.size()));
    try {
      read_train_state(file);
      ADD_FAILURE() << "accepted " << bad.damaged;
    } catch (const std::runtime_error& error) {
      EXPECT_EQ(std::string(error.what()), "Could not read " + file.string() + ": " + bad.message);
    }
  }
}

}  // namespace
}  // namespace saccade
