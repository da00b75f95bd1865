// load_trained_run: the run's config over today's defaults, its vocabulary and model.
#include "decode/trained_run.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "base/text.h"
#include "config/yaml_tree.h"
#include "io/log.h"
#include "models/checkpoint.h"

namespace saccade {
namespace {

// A YAML file, or a one-line std::runtime_error naming it.
YAML::Node read_yaml(const std::filesystem::path& path) {
  try {
    const YAML::Node root = YAML::LoadFile(path.string());
    config_detail::check_expanded_size(root, path.string());
    return root;
  } catch (const YAML::Exception& error) {
    throw std::runtime_error("Could not read " + path.string() + ": " + error.what());
  }
}

// Today's defaults with the run's choices, the saved config over them, the caller's overrides.
Config composed_over_today(
    const std::filesystem::path& run_dir,
    const YAML::Node& saved,
    const std::filesystem::path& saved_file,
    const ComposeRequest& today) {
  ComposeRequest request = today;
  request.overrides = run_choices(run_dir, today);
  request.overrides.insert(request.overrides.end(), today.overrides.begin(), today.overrides.end());
  request.overlay = saved;
  const Composition composition = compose(request);
  for (const auto& key : composition.overlay_only_keys) {
    log::warn() << saved_file.string() << ": '" << key
                << "' is not in today's configs; kept, but nothing reads it";
  }
  return composition.config;
}

}  // namespace

std::vector<std::string> run_choices(const std::filesystem::path& run_dir, const ComposeRequest& today) {
  std::vector<std::string> overrides;
  const auto record = run_dir / "run.yaml";
  if (!std::filesystem::exists(record)) return overrides;
  const YAML::Node choices = read_yaml(record)["choices"];
  const Composition defaults = compose({today.config_dir, today.config_name, {}});
  for (const auto& [group, default_option] : defaults.choices) {
    const YAML::Node chosen = choices.IsMap() ? choices[group] : YAML::Node();
    if (group == "experiment" || !chosen || !chosen.IsScalar()) continue;
    const auto options = group_options(today.config_dir, group);
    if (std::find(options.begin(), options.end(), chosen.Scalar()) != options.end()) {
      overrides.push_back(group + "=" + chosen.Scalar());
    } else {
      log::warn() << record.string() << ": the run chose " << group << "=" << chosen.Scalar() << ", which "
                  << today.config_dir.string() << " no longer has; today's default is used";
    }
  }
  return overrides;
}

TrainedRun load_trained_run(
    const std::filesystem::path& run_dir,
    const ComposeRequest& today,
    const Placement& placement,
    const std::string& checkpoint) {
  if (checkpoint != "best" && checkpoint != "last") {
    throw std::invalid_argument(
        "checkpoint '" + checkpoint + "' is not one a run keeps: best (by train.val_metric) or last");
  }
  TrainedRun run;
  run.dir = run_dir;
  run.checkpoint = run_dir / "checkpoints" / checkpoint;
  check_checkpoint(run.checkpoint);
  const CheckpointFiles files{run.checkpoint};
  const YAML::Node saved = read_yaml(files.config());
  if (std::filesystem::is_directory(today.config_dir) || !today.overrides.empty()) {
    run.config = composed_over_today(run_dir, saved, files.config(), today);
  } else {
    log::warn() << "No config folder at " << today.config_dir.string() << ": " << files.config().string()
                << " is used as it is";
    run.config = Config(saved);
  }
  run.dataset = dataset_options_from(run.config);
  validate(run.dataset);
  EncoderOptions encoder = encoder_options_from(run.config);
  encoder.weights.reset();  // the checkpoint holds every weight
  validate(encoder);
  // Another kind of decoder would fail on its keys or on every weight's name; say what differs.
  const DecoderKind trained = decoder_kind_from(Config(saved)), asked = decoder_kind_from(run.config);
  if (asked != trained) {
    throw std::runtime_error(
        "decoder.kind=" + to_string(asked) + " does not fit the checkpoint " + run.checkpoint.string() +
        ", which holds a " + to_string(trained) + " decoder");
  }
  const DecoderOptions decoder = decoder_options_from(run.config);
  const auto unreadable = [&](const std::exception& error) {
    return std::runtime_error(
        "The checkpoint " + run.checkpoint.string() + " cannot be read: " + first_line(error.what()));
  };
  try {
    run.vocabulary = load_checkpoint_vocabulary(run.checkpoint);
  } catch (const std::exception& error) {
    throw unreadable(error);
  }
  run.model = build_captioner(encoder, decoder, run.vocabulary.size());
  try {
    run.epoch = load_checkpoint(run.checkpoint, *run.model, nullptr).epoch;
  } catch (const std::invalid_argument& error) {  // weights of other names or shapes
    throw std::runtime_error(
        "The checkpoint " + run.checkpoint.string() +
        " does not match its config.yaml and vocab.json: " + first_line(error.what()));
  } catch (const std::exception& error) {  // truncated or corrupt files
    throw unreadable(error);
  }
  run.search = search_options_from(run.config, run.vocabulary);
  validate(run.search);
  run.model->to(placement.device);
  run.model->eval();
  run.placement = placement;
  return run;
}

}  // namespace saccade
