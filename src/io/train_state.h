// A run's training progress and its file, state.json (one in each checkpoint folder): what a
// resumed run continues from.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>

namespace saccade {

struct TrainState {
  int64_t epoch = 0;                         // epochs completed
  int64_t step = 0;                          // optimizer steps taken
  double learning_rate = 0.0;                // the decoder's current learning rate
  double encoder_learning_rate = 0.0;        // the fine-tuned encoder's current learning rate
  std::optional<double> best_metric;         // best validation score so far (higher is better)
  int64_t best_epoch = 0;                    // the epoch that reached it
  int64_t epochs_without_improvement = 0;    // for early stopping and reduce-on-plateau
  int64_t plateau_epochs = 0;                // epochs since the learning rate was last reduced on plateau
  std::optional<double> reinforce_baseline;  // hard attention: the moving average of log p(y | s, a)
  std::optional<double> loss_scale;          // runtime.precision=fp16: the gradient scaler's scale
  int64_t loss_scale_good_steps = 0;         // and its steps without overflow since it last changed
};

bool operator==(const TrainState& a, const TrainState& b);

// Reading throws std::runtime_error naming the file and the key when the file is unreadable or a
// number is out of range (a negative count or learning rate, best_epoch past
// epoch, a loss scale that is not positive).
void write_train_state(const std::filesystem::path& file, const TrainState& state);
TrainState read_train_state(const std::filesystem::path& file);

}  // namespace saccade
