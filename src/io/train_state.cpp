// state.json: training progress as JSON, its numbers checked on reading.
#include "io/train_state.h"

#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include "io/json.h"

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

// state.json's numbers are checked, as a hand-edited or damaged file would otherwise resume a run
// with a negative learning rate or an epoch counter past its end.
// A count of 0 or more, and at most `at_most` (the epochs completed) when given.
int64_t count_at(const Json& json, const std::string& key, std::optional<int64_t> at_most = std::nullopt) {
  const int64_t value = json.at(key).as_int64();
  if (value < 0 || (at_most && value > *at_most)) {
    throw std::invalid_argument(
        "'" + key + "' must be a count " +
        (at_most ? "from 0 to the epochs completed, " + std::to_string(*at_most)
                 : std::string("of 0 or more")) +
        ", got " + std::to_string(value));
  }
  return value;
}

// A number of at least `at_least` (above it when `strictly`).
double number_at(const Json& json, const std::string& key, double at_least, bool strictly) {
  const double value = json.at(key).as_double();
  if (value < at_least || (strictly && value == at_least)) {
    std::ostringstream message;
    message << "'" << key << "' must be a number " << (strictly ? "above " : "from ") << at_least << ", got "
            << value;
    throw std::invalid_argument(message.str());
  }
  return value;
}

TrainState state_from_json(const Json& json) {
  TrainState state;
  state.epoch = count_at(json, "epoch");
  state.step = count_at(json, "step");
  state.learning_rate = number_at(json, "learning_rate", 0, false);
  state.encoder_learning_rate = number_at(json, "encoder_learning_rate", 0, false);
  // null before the first validation, but present in every state.json
  if (!json.at("best_metric").is_null()) state.best_metric = json.at("best_metric").as_double();
  state.best_epoch = count_at(json, "best_epoch", state.epoch);
  state.epochs_without_improvement = count_at(json, "epochs_without_improvement", state.epoch);
  state.plateau_epochs = count_at(json, "plateau_epochs", state.epoch);
  // Absent from checkpoints of soft-attention runs written before hard attention existed.
  if (const Json* baseline = json.find("reinforce_baseline"); baseline && !baseline->is_null())
    state.reinforce_baseline = baseline->as_double();
  if (const Json* scale = json.find("loss_scale"); scale && !scale->is_null())
    state.loss_scale = number_at(json, "loss_scale", 0, true);
  if (json.find("loss_scale_good_steps") != nullptr)
    state.loss_scale_good_steps = count_at(json, "loss_scale_good_steps");
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

void write_train_state(const std::filesystem::path& file, const TrainState& state) {
  write_json_file(file, state_to_json(state), 2);
}

TrainState read_train_state(const std::filesystem::path& file) {
  try {
    return state_from_json(read_json_file(file));
  } catch (const std::exception& error) {  // a corrupt file, not weights that do not fit
    throw std::runtime_error("Could not read " + file.string() + ": " + error.what());
  }
}

}  // namespace saccade
