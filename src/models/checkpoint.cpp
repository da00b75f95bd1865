// Checkpoint folders: write to a temporary sibling, then swap atomically.
#include "models/checkpoint.h"

#include <torch/serialize.h>

#include <sstream>
#include <stdexcept>

#include "base/text.h"
#include "io/run_folder.h"
#include "io/safetensors.h"
#include "io/temporaries.h"
#include "models/weights.h"

namespace saccade {

void save_checkpoint(
    const std::filesystem::path& dir,
    const torch::nn::Module& model,
    torch::optim::Optimizer& optimizer,
    const TrainState& state,
    const Vocabulary& vocabulary,
    const std::string& config_yaml) {
  // <dir>.tmp-<pid>: a kill leaves it to the next writer of `dir`, or to a resume of this run.
  const std::filesystem::path staged = temporary_for(dir);
  remove_stale_temporaries(dir);
  remove_tree(staged);
  std::filesystem::create_directories(staged);
  try {
    const CheckpointFiles files{staged};
    save_state_dict(model, files.model());
    // Serialized in memory, then written by the checked writer: LibTorch's file writer throws from
    // a destructor on a full disk, which ends the process.
    std::ostringstream optimizer_bytes;
    torch::save(optimizer, optimizer_bytes);
    write_file_atomically(files.optimizer(), optimizer_bytes.str());
    write_train_state(files.state(), state);
    vocabulary.save(files.vocabulary());
    write_file_atomically(files.config(), config_yaml);
    swap_into_place(staged, dir);
  } catch (...) {
    std::error_code ignored;  // the previous checkpoint at `dir` is untouched
    remove_tree(staged, ignored);
    throw;
  }
}

void check_checkpoint(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir)) {
    throw std::runtime_error(
        "No checkpoint at " + dir.string() +
        " (the run has not finished an epoch, or it is not a run folder)");
  }
  const CheckpointFiles files{dir};
  for (const auto& path :
       {files.model(), files.optimizer(), files.state(), files.vocabulary(), files.config()}) {
    if (!std::filesystem::exists(path)) {
      throw std::runtime_error(
          "Incomplete checkpoint " + dir.string() + ": missing " + path.filename().string());
    }
  }
}

TrainState load_checkpoint(
    const std::filesystem::path& dir, torch::nn::Module& model, torch::optim::Optimizer* optimizer) {
  check_checkpoint(dir);
  const CheckpointFiles files{dir};
  LoadStateDictOptions options;
  options.destination = "the model of checkpoint " + dir.string();
  load_state_dict(model, SafetensorsReader(files.model()), options);
  // The optimizer's moments go where the parameters are.
  const auto parameters = model.parameters();
  const torch::Device device = parameters.empty() ? torch::Device(torch::kCPU) : parameters.front().device();
  if (optimizer != nullptr) {
    try {
      torch::load(*optimizer, files.optimizer().string(), device);
    } catch (const c10::Error& error) {  // a torn or foreign file: LibTorch's message does not name it
      throw std::runtime_error(
          "Could not read " + files.optimizer().string() + ": " + first_line(error.what_without_backtrace()));
    }
  }
  return read_train_state(files.state());
}

Vocabulary load_checkpoint_vocabulary(const std::filesystem::path& dir) {
  return Vocabulary::load(CheckpointFiles{dir}.vocabulary());
}

}  // namespace saccade
