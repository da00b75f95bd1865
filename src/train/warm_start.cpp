// initialize_from and check_resumable (see warm_start.h).
#include "train/warm_start.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "config/config.h"
#include "io/log.h"
#include "io/run_folder.h"
#include "models/architecture_keys.h"
#include "models/checkpoint.h"

namespace saccade {
namespace {

// Throws std::invalid_argument "it was trained with K=V, this run has K=W" when `checkpoint`'s
// saved config differs from `config_yaml` in an architecture key.
void check_same_architecture(const std::filesystem::path& checkpoint, const std::string& config_yaml) {
  const Config saved(read_yaml_file(CheckpointFiles{checkpoint}.config()));  // errors name the file
  if (const auto difference = architecture_difference(saved, Config(YAML::Load(config_yaml)))) {
    const std::string& key = difference->key;
    throw std::invalid_argument(
        "it was trained with " + key + "=" + difference->trained + ", this run has " + key + "=" +
        difference->given + ". HINT: set " + key + "=" + difference->trained);
  }
}

// Throws std::invalid_argument naming the first word that differs, or the sizes.
void check_same_vocabulary(const Vocabulary& theirs, const Vocabulary& ours) {
  if (theirs == ours) return;
  std::string difference = "sizes " + std::to_string(theirs.size()) + " and " + std::to_string(ours.size());
  for (int64_t id = 0; id < std::min(theirs.size(), ours.size()); ++id) {
    if (theirs.word(id) != ours.word(id)) {
      difference =
          "word " + std::to_string(id) + " is '" + theirs.word(id) + "' there, '" + ours.word(id) + "' here";
      break;
    }
  }
  throw std::invalid_argument(
      "its vocabulary differs from the one this run's data builds (" + difference +
      "). HINT: use the run's dataset and dataset.vocabulary settings");
}

}  // namespace

void initialize_from(
    const std::filesystem::path& run,
    torch::nn::Module& model,
    const Vocabulary& vocabulary,
    const std::string& config_yaml) {
  const std::filesystem::path checkpoint = run / "checkpoints" / "best";
  try {
    check_checkpoint(checkpoint);
    check_same_vocabulary(load_checkpoint_vocabulary(checkpoint), vocabulary);
    check_same_architecture(checkpoint, config_yaml);
    const TrainState initial = load_checkpoint(checkpoint, model, nullptr);
    log::info() << "Starting from the weights of " << run.string() << " (epoch " << initial.epoch
                << (initial.best_metric ? ", validation " + std::to_string(*initial.best_metric)
                                        : std::string())
                << ")";
  } catch (const std::exception& error) {
    throw std::invalid_argument("train.init_from=" + run.string() + ": " + error.what());
  }
}

void check_resumable(const std::filesystem::path& run, const std::string& config_yaml) {
  try {
    check_same_architecture(run / "checkpoints" / "last", config_yaml);
  } catch (const std::exception& error) {
    throw std::invalid_argument("train.resume=" + run.string() + ": " + error.what());
  }
}

}  // namespace saccade
