// The config files under a configs folder, each loaded once (not part of the public API).
//
// A file is read as Hydra and OmegaConf read it, so configs compose as they would there: a
// leading `# @package` header is kept, duplicate keys are refused, YAML merge keys are expanded.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

}  // namespace saccade::config_detail
