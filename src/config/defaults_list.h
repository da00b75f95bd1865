// Hydra 1.3's defaults list (not part of the public API): loading config files, building the
// defaults tree with the command line's group overrides, and flattening it into merge order.
//
// The tree is built as Hydra builds it: each file's `defaults:` entries are visited last to
// first, so an `override /group: x` in a file late in the list (an experiment) is registered
// before the group it changes is reached; the first registration of a group wins, and the
// command line registers first. Nested entries are relative to the including file's group
// and package. A file's own content goes where its `_self_` is (appended last if absent).
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/overrides.h"

namespace saccade::config_detail {

// One config file, as loaded.
struct ConfigFile {
  YAML::Node content;                         // the mapping, without its `defaults` key
  YAML::Node defaults;                        // the `defaults` sequence (undefined if none)
  std::optional<std::string> package_header;  // the value of a leading `# @package` line
};

// The config files under one folder, each loaded at most once.
class ConfigRepository {
 public:
  explicit ConfigRepository(std::filesystem::path dir);

  // The config at `config_path` ("dataset/shapes" is <dir>/dataset/shapes.yaml); nullptr if
  // there is no such file. Malformed YAML throws ConfigError naming the file and line.
  const ConfigFile* load(const std::string& config_path);

  // Whether <dir>/<group> is a folder.
  bool group_exists(const std::string& group) const;

  // The `.yaml` files of a group, without the extension, sorted.
  std::vector<std::string> group_options(const std::string& group) const;

  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path dir_;
  std::map<std::string, std::optional<ConfigFile>> cache_;
};

struct DefaultsList {
  std::vector<DefaultsEntry> entries;                                       // merge order
  std::vector<std::pair<std::string, std::optional<std::string>>> choices;  // depth-first order
};

// The final defaults list of the primary config `config_name`, with the group overrides
// (`db=x`, `+db=x`, `~db`) applied. Throws ConfigError with Hydra's messages.
DefaultsList build_defaults_list(
    ConfigRepository& repo, const std::string& config_name, const std::vector<Override>& group_overrides);

}  // namespace saccade::config_detail
