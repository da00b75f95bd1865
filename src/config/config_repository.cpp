// Config files loaded (`# @package` headers, duplicate keys, merge keys) and config group options.
#include "config/config_repository.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/text_cursor.h"
#include "config/yaml_tree.h"

namespace saccade::config_detail {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ConfigError("Could not read config file " + file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// A `# @key value` line, `\s*#\s*@.*`: no '\r' after the '@', which that regex's `.` did not take.
bool is_header_line(std::string_view line) {
  TextCursor cursor(line);
  cursor.take_while(is_ascii_space);
  if (!cursor.take('#')) return false;
  cursor.take_while(is_ascii_space);
  return cursor.take('@') && cursor.rest().find_first_of("\r\n") == std::string_view::npos;
}

// Hydra reads `# @key value` lines only before anything else (blank lines aside).
std::optional<std::string> package_header(const std::string& text, const fs::path& file) {
  std::istringstream lines(text);
  std::string line;
  std::optional<std::string> package;
  while (std::getline(lines, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    if (!is_header_line(line)) break;
    std::istringstream words(line.substr(line.find('#') + 1));
    std::vector<std::string> parts;
    for (std::string word; words >> word;) parts.push_back(word);
    if (parts.size() != 2)
      throw ConfigError(file.string() + ": expected a header '# @key value', got '" + line + "'");
    if (parts[0] == "@package") package = parts[1];
  }
  return package;
}

// A plain `<<` key: YAML's merge key, which PyYAML's loader, and so OmegaConf's, expands.
bool is_merge_key(const YAML::Node& key) {
  return key.IsScalar() && key.Tag() == "?" && key.Scalar() == "<<";
}

// yaml-cpp keeps duplicate keys; OmegaConf rejects them, merge keys aside.
void check_duplicate_keys(const YAML::Node& node, const fs::path& file) {
  if (node.IsSequence()) {
    for (const auto& item : node) check_duplicate_keys(item, file);
  }
  if (!node.IsMap()) return;
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    if (is_merge_key(it->first)) {
      check_duplicate_keys(it->second, file);
      continue;
    }
    if (!seen.insert(it->first.Scalar()).second) {
      throw ConfigError(
          file.string() + ":" + std::to_string(it->first.Mark().line + 1) + ": duplicate key '" +
          it->first.Scalar() + "'");
    }
    check_duplicate_keys(it->second, file);
  }
}

// A copy of `node` (aliases copied apart, as OmegaConf's containers are) with each merge key
// expanded as PyYAML expands it: `<<: *base`, or a list of mappings of which the first wins, puts
// their keys before the mapping's own, and the mapping's own values win.
YAML::Node with_merge_keys_expanded(const YAML::Node& node, const fs::path& file) {
  if (node.IsSequence()) {
    YAML::Node copy(YAML::NodeType::Sequence);
    for (const auto& item : node) copy.push_back(with_merge_keys_expanded(item, file));
    return copy;
  }
  if (!node.IsMap()) return YAML::Clone(node);
  std::vector<std::pair<YAML::Node, YAML::Node>> merged, own;
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node value = with_merge_keys_expanded(it->second, file);
    if (!is_merge_key(it->first)) {
      own.emplace_back(it->first, value);
      continue;
    }
    const bool mappings =
        value.IsMap() ||
        (value.IsSequence() &&
         std::all_of(value.begin(), value.end(), [](const YAML::Node& item) { return item.IsMap(); }));
    if (!mappings) {
      throw ConfigError(
          file.string() + ":" + std::to_string(it->first.Mark().line + 1) +
          ": the merge key '<<' takes a mapping or a list of mappings, got " + python_type(it->second));
    }
    // A list's mappings go in reverse order, so that the first one's values win.
    std::vector<YAML::Node> sources;
    if (value.IsMap()) {
      sources.push_back(value);
    } else {
      for (const auto& item : value) sources.insert(sources.begin(), item);
    }
    for (const YAML::Node& source : sources) {
      for (auto entry = source.begin(); entry != source.end(); ++entry)
        merged.emplace_back(entry->first, entry->second);
    }
  }
  // As a Python dict fills: a key seen again keeps its place and takes the later value.
  merged.insert(merged.end(), own.begin(), own.end());
  std::vector<size_t> first_of_key;
  std::map<std::string, size_t> last_of_key;
  for (size_t i = 0; i < merged.size(); ++i) {
    const auto [at, first] = last_of_key.emplace(merged[i].first.Scalar(), i);
    if (first) first_of_key.push_back(i);
    at->second = i;
  }
  YAML::Node copy(YAML::NodeType::Map);
  for (const size_t i : first_of_key) {
    copy.force_insert(merged[i].first, merged[last_of_key.at(merged[i].first.Scalar())].second);
  }
  return copy;
}

}  // namespace

ConfigRepository::ConfigRepository(std::filesystem::path dir) : dir_(std::move(dir)) {}

const ConfigFile* ConfigRepository::load(const std::string& config_path) {
  const auto cached = cache_.find(config_path);
  if (cached != cache_.end()) return cached->second ? &*cached->second : nullptr;
  const fs::path file = dir_ / (config_path + ".yaml");
  // A path the file system refuses (a name too long for it) holds no config either.
  std::error_code error;
  if (!fs::is_regular_file(file, error)) {
    cache_[config_path] = std::nullopt;
    return nullptr;
  }
  const std::string text = read_text(file);
  ConfigFile loaded;
  loaded.package_header = package_header(text, file);
  YAML::Node root = parse_yaml(text, file.string());
  check_expanded_size(root, file.string());
  if (root.IsNull()) root.reset(YAML::Node(YAML::NodeType::Map));
  if (!root.IsMap())
    throw ConfigError(file.string() + ": a config file must hold a mapping at the top level");
  check_duplicate_keys(root, file);
  root.reset(with_merge_keys_expanded(root, file));
  const YAML::Node defaults = find_child(root, "defaults");
  if (defaults) {
    if (!defaults.IsSequence()) {
      throw ConfigError("Invalid defaults list in '" + config_path + "', defaults must be a list.");
    }
    loaded.defaults = defaults;
    root.remove("defaults");
  }
  loaded.content = root;
  return &*(cache_[config_path] = loaded);
}

bool ConfigRepository::group_exists(const std::string& group) const {
  // A key too long for a file name (`+kkk...=1`) is no group but a plain key.
  std::error_code error;
  return fs::is_directory(dir_ / group, error);
}

std::vector<std::string> ConfigRepository::group_options(const std::string& group) const {
  std::vector<std::string> options;
  std::error_code error;
  for (const auto& item : fs::directory_iterator(dir_ / group, error)) {
    if (item.is_regular_file(error) && item.path().extension() == ".yaml")
      options.push_back(item.path().stem().string());
  }
  std::sort(options.begin(), options.end());
  return options;
}

}  // namespace saccade::config_detail
