// Config: the composed experiment configuration with typed, path-addressed reads.
//
//   Composition c = compose({.config_dir = "configs", .overrides = {"train.lr=1e-3"}});
//   int batch = c.config.get<int>("train.batch_size");
//
// A Config holds the composed YAML tree with interpolations unresolved; every read resolves
// (OmegaConf semantics: `${a.b}`, `${.x}`, `${oc.env:VAR,default}`, `${now:fmt}`), so reads see
// the final tree. The root is in struct mode: reading an unknown key is an error that names the
// nearest known key. Errors are ConfigError (a std::invalid_argument): the CLI maps them to exit 2.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/text.h"

namespace saccade {

// A usage or configuration mistake: bad key, bad value, missing file. One line: the control
// characters of values it quotes (a block scalar's newlines) are escaped.
class ConfigError : public std::invalid_argument {
 public:
  explicit ConfigError(const std::string& message)
      : std::invalid_argument(escape_control_characters(message)) {}
};

class Config {
 public:
  Config() = default;
  explicit Config(YAML::Node root);

  // The value at a dotted path ("train.batch_size"), interpolations resolved, converted to T.
  // T is one of bool, int, int64_t, float, double, std::string, std::vector<int>,
  // std::vector<int64_t>, std::vector<float>, std::vector<double>, std::vector<std::string>.
  // Throws ConfigError for an unknown key (naming the nearest known key), a `???` value
  // ("Missing mandatory value: a.b"), a null, or a value that does not convert
  // ("train.batch_size: expected an integer, got 'abc'").
  template <typename T>
  T get(const std::string& key) const;

  // As get<T>, but a null value gives std::nullopt. Unknown keys are still errors.
  template <typename T>
  std::optional<T> get_optional(const std::string& key) const;

  // The string at `key` through `parse` (an enum's parse_* function): a std::invalid_argument
  // from `parse` becomes a ConfigError prefixed with the key ("decoder.gate: Unknown gate ...").
  template <typename Parse>
  auto get_parsed(const std::string& key, Parse parse) const {
    const auto value = get<std::string>(key);
    try {
      return parse(value);
    } catch (const std::invalid_argument& error) {
      throw ConfigError(key + ": " + error.what());
    }
  }

  // Whether the path exists (with any value, including null and `???`).
  bool has(const std::string& key) const;

  // Child keys of the mapping at `key` ("" = root), in file order. Error if not a mapping.
  std::vector<std::string> keys(const std::string& key) const;

  // The sub-tree at `key` with every interpolation resolved (a deep copy).
  YAML::Node resolved(const std::string& key = "") const;

  // The whole config as YAML text, resolved (as `--cfg job --resolve` prints it: an
  // interpolation of a `???` value prints `???`) or not (as `--cfg job` prints it).
  std::string to_yaml(bool resolve = true) const;

  // The underlying unresolved tree.
  const YAML::Node& root() const { return root_; }

 private:
  YAML::Node root_;
};

// One entry of the final (flattened) defaults list, as `--info defaults` prints it.
struct DefaultsEntry {
  std::string config_path;  // "dataset/shapes", or "config" for the primary config
  std::string package;      // where its content lands: "dataset", "" for the root
  std::string parent;       // the config that listed it ("" for the primary config)
  bool is_self = false;     // where config_path's own content lands (its `_self_`)
};

struct ComposeRequest {
  std::filesystem::path config_dir = "configs";  // `--config-path`
  std::string config_name = "config";            // `--config-name`, without ".yaml"
  std::vector<std::string> overrides;            // command-line overrides, in order
  // A tree merged over the defaults list's result before the value overrides, as one more
  // config file would be (a trained run's saved config over today's defaults). Null = none.
  YAML::Node overlay{};
};

struct Composition {
  Config config;
  std::vector<DefaultsEntry> defaults;  // the final defaults list, in merge order
  // The chosen option per config group, in defaults-list order ("experiment" -> "smoke");
  // a null choice is std::nullopt (Hydra's hydra.runtime.choices).
  std::vector<std::pair<std::string, std::optional<std::string>>> choices;
  // The keys of the request's overlay that the defaults list does not have, outermost only
  // ("train.note", not its children), in the overlay's order. They are merged in all the same.
  std::vector<std::string> overlay_only_keys;
};

// Hydra 1.3 composition: defaults tree, group overrides, merge, then value overrides.
// Throws ConfigError with Hydra's messages for every failure (file and line for bad YAML).
Composition compose(const ComposeRequest& request);

// Expands multirun overrides into jobs: sweeps `k=a,b`, `choice(...)`, `range(a,b[,step])`,
// `group=glob(pattern)` over the group's options in `config_dir` (config/overrides.h);
// cartesian product with the first key varying slowest. Each job is a list of plain overrides.
std::vector<std::vector<std::string>> expand_sweeps(
    const std::vector<std::string>& overrides, const std::filesystem::path& config_dir = "configs");

// Throws ConfigError (Hydra's "Ambiguous value for argument" text) if any override is a sweep;
// used for single runs.
void reject_sweeps(const std::vector<std::string>& overrides);

// The option names available for a group (files in `config_dir/group`, sorted, no extension).
std::vector<std::string> group_options(const std::filesystem::path& config_dir, const std::string& group);

}  // namespace saccade
