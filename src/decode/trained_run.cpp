// load_trained_run: the run's config over today's defaults, its vocabulary and model.
#include "decode/trained_run.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <stdexcept>

#include "base/text.h"
#include "config/yaml_tree.h"
#include "io/log.h"
#include "models/architecture_keys.h"
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

// A group the caller switches away from the one the run is composed with: the saved config,
// merged over the group's values, would hide the switch. ConfigError naming both options.
void refuse_group_switches(
    const Composition& trained, const Composition& given, const std::filesystem::path& run_dir) {
  const auto option_of = [](const Composition& composition, const std::string& group) -> std::string {
    for (const auto& [name, option] : composition.choices) {
      if (name == group) return option.value_or("null");
    }
    return "null";
  };
  for (const auto& [group, option] : given.choices) {
    const std::string was = option_of(trained, group), is = option.value_or("null");
    if (was == is) continue;
    throw ConfigError(
        group + "=" + is + ": the trained run " + run_dir.string() + " is composed with " + group + "=" +
        was + "; a trained run's config groups cannot be switched (its saved config decides the model)");
  }
}

// An override of a key that decides the checkpoint's model (models/architecture_keys.h): where
// the weight shapes still fit, it would load and silently compute something else.
void refuse_architecture_changes(
    const Config& trained, const Config& given, const std::filesystem::path& run_dir) {
  const auto difference = architecture_difference(trained, given);
  if (!difference) return;
  throw ConfigError(
      difference->key + "=" + difference->given + " changes the model of the trained run " +
      run_dir.string() + ", which has " + difference->key + "=" + difference->trained +
      "; a trained run's architecture keys cannot be overridden");
}

// Today's defaults with the run's choices and the saved config over them, then the caller's
// overrides, which may change how the model is used (decode.*), never the model.
Config composed_over_today(
    const std::filesystem::path& run_dir,
    const YAML::Node& saved,
    const std::filesystem::path& saved_file,
    const ComposeRequest& today) {
  ComposeRequest request = today;
  request.overrides = run_choices(run_dir, today);
  request.overlay = saved;
  const Composition trained = compose(request);
  for (const auto& key : trained.overlay_only_keys) {
    log::warn() << saved_file.string() << ": '" << key
                << "' is not in today's configs; kept, but nothing reads it";
  }
  if (today.overrides.empty()) return trained.config;
  request.overrides.insert(request.overrides.end(), today.overrides.begin(), today.overrides.end());
  const Composition given = compose(request);
  refuse_group_switches(trained, given, run_dir);
  refuse_architecture_changes(trained.config, given.config, run_dir);
  return given.config;
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
