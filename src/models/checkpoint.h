// Checkpoints: everything needed to evaluate a model or to continue its training exactly.
//
//   <run>/checkpoints/{best,last}/
//     model.safetensors   every parameter and buffer of the Captioner, by name
//     optimizer.pt        the optimizer's state (LibTorch archive)
//     state.json          epoch, step, learning rates, schedule and early-stopping counters
//     vocab.json          the vocabulary the model was trained with
//     config.yaml         the resolved config of the run
//
// A checkpoint is written into a temporary sibling folder and swapped into place with one
// atomic rename (renameat2 RENAME_EXCHANGE), so a kill at any moment leaves either the old or
// the new checkpoint whole, never a mix.
#pragma once

#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <filesystem>
#include <string>

#include "data/vocabulary.h"
#include "io/train_state.h"

namespace saccade {

// The files of a checkpoint folder.
struct CheckpointFiles {
  std::filesystem::path dir;
  std::filesystem::path model() const { return dir / "model.safetensors"; }
  std::filesystem::path optimizer() const { return dir / "optimizer.pt"; }
  std::filesystem::path state() const { return dir / "state.json"; }
  std::filesystem::path vocabulary() const { return dir / "vocab.json"; }
  std::filesystem::path config() const { return dir / "config.yaml"; }
};

// Writes a whole checkpoint to `dir` (replacing an existing one atomically).
void save_checkpoint(
    const std::filesystem::path& dir,
    const torch::nn::Module& model,
    torch::optim::Optimizer& optimizer,
    const TrainState& state,
    const Vocabulary& vocabulary,
    const std::string& config_yaml);

// Throws std::runtime_error naming the folder and the first missing file when `dir` is not a
// complete checkpoint (with a hint when the run never finished an epoch).
void check_checkpoint(const std::filesystem::path& dir);

// Loads the weights into `model` (every key must match, on whatever device the model is), and the
// optimizer state when given, onto the model's device. Weights that do not fit the model throw
// std::invalid_argument; unreadable or corrupt files std::runtime_error.
TrainState load_checkpoint(
    const std::filesystem::path& dir, torch::nn::Module& model, torch::optim::Optimizer* optimizer);

// The vocabulary saved beside a checkpoint's weights.
Vocabulary load_checkpoint_vocabulary(const std::filesystem::path& dir);

}  // namespace saccade
