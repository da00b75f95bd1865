// Checkpoint folders: write to a temporary sibling, then swap atomically.
#include "models/checkpoint.h"

#include <torch/serialize.h>

#include <sstream>
#include <stdexcept>

#include "base/text.h"
#include "io/json.h"
#include "io/run_folder.h"
#include "io/safetensors.h"
#include "io/temporaries.h"
#include "models/weights.h"

namespace saccade {
namespace {

Json state_to_json(const TrainState& state) {
  Json json = Json::object();
  json.set("epoch", Json(state.epoch));
  json.set("step", Json(state.step));
  json.set("learning_rate", Json(state.learning_rate));
  json.set("encoder_learning_rate", Json(state.encoder_learning_rate));
  json.set("best_metric", Json::number_or_null(state.best_metric));
  json.set("best_epoch", Json(state.best_epoch));
  json.set("epochs_without_improvement", Json(state.epochs_without_improvement));
  json.set("plateau_epochs", Json(state.plateau_epochs));
  json.set("reinforce_baseline", Json::number_or_null(state.reinforce_baseline));
  json.set("loss_scale", Json::number_or_null(state.loss_scale));
  json.set("loss_scale_good_steps", Json(state.loss_scale_good_steps));
  return json;
}

TrainState state_from_json(const Json& json) {
  TrainState state;
  state.epoch = json.at("epoch").as_int64();
  state.step = json.at("step").as_int64();
  state.learning_rate = json.at("learning_rate").as_double();
  state.encoder_learning_rate = json.at("encoder_learning_rate").as_double();
  if (!json.at("best_metric").is_null()) state.best_metric = json.at("best_metric").as_double();
  state.best_epoch = json.at("best_epoch").as_int64();
  state.epochs_without_improvement = json.at("epochs_without_improvement").as_int64();
  state.plateau_epochs = json.at("plateau_epochs").as_int64();
  // Absent from checkpoints of soft-attention runs written before hard attention existed.
  if (const Json* baseline = json.find("reinforce_baseline"); baseline && !baseline->is_null())
    state.reinforce_baseline = baseline->as_double();
  if (const Json* scale = json.find("loss_scale"); scale && !scale->is_null())
    state.loss_scale = scale->as_double();
  if (const Json* good = json.find("loss_scale_good_steps")) state.loss_scale_good_steps = good->as_int64();
  return state;
}

}  // namespace

bool operator==(const TrainState& a, const TrainState& b) {
  return a.epoch == b.epoch && a.step == b.step && a.learning_rate == b.learning_rate &&
         a.encoder_learning_rate == b.encoder_learning_rate && a.best_metric == b.best_metric &&
         a.best_epoch == b.best_epoch && a.epochs_without_improvement == b.epochs_without_improvement &&
         a.plateau_epochs == b.plateau_epochs && a.reinforce_baseline == b.reinforce_baseline &&
         a.loss_scale == b.loss_scale && a.loss_scale_good_steps == b.loss_scale_good_steps;
}

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
    write_json_file(files.state(), state_to_json(state), 2);
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
  try {
    return state_from_json(read_json_file(files.state()));
  } catch (const std::exception& error) {  // a corrupt file, not weights that do not fit
    throw std::runtime_error("Could not read " + files.state().string() + ": " + error.what());
  }
}

Vocabulary load_checkpoint_vocabulary(const std::filesystem::path& dir) {
  return Vocabulary::load(CheckpointFiles{dir}.vocabulary());
}

}  // namespace saccade
