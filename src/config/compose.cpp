// compose(): defaults list -> merged tree -> config-value overrides, as Hydra 1.3 composes a job.
#include <filesystem>

#include "config/config.h"
#include "config/config_repository.h"
#include "config/defaults_list.h"
#include "config/interpolation.h"
#include "config/overrides.h"
#include "config/yaml_tree.h"

namespace saccade {
namespace {

using config_detail::Located;
using config_detail::Override;
using config_detail::OverrideKind;
using config_detail::Resolver;

// `content` placed at a dotted package ("a.b" -> {a: {b: content}}).
YAML::Node embed(const YAML::Node& content, const std::string& package) {
  YAML::Node node(content);
  const auto segments = config_detail::split_key(package);
  for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
    YAML::Node outer(YAML::NodeType::Map);
    outer[*it] = node;
    node.reset(outer);
  }
  return node;
}

// OmegaConf.update(cfg, key, value, merge=True) on a root in struct mode. Without force_add
// (a plain `a.b=v`) no key may be added; returns false where struct mode forbids the change, or
// where the key names no item of a list (a list takes no new items by index).
bool update(YAML::Node& root, const std::vector<std::string>& path, const YAML::Node& value, bool force_add) {
  YAML::Node node(root);
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    YAML::Node child = config_detail::find_child(node, path[i]);
    if (!child || !(child.IsMap() || child.IsSequence())) {
      // A missing or non-container step becomes an empty mapping, which only force-add may fill
      // (in a list, only in place of an item it has).
      if (!force_add || !(node.IsMap() || (node.IsSequence() && child))) return false;
      if (node.IsMap()) {
        node[path[i]] = YAML::Node(YAML::NodeType::Map);
      } else {
        node[std::stoul(path[i])] = YAML::Node(YAML::NodeType::Map);
      }
      child.reset(config_detail::find_child(node, path[i]));
    }
    node.reset(child);
  }
  YAML::Node target = config_detail::find_child(node, path.back());
  if (node.IsSequence()) {
    if (!target) return false;
    node[std::stoul(path.back())] = YAML::Clone(value);
    return true;
  }
  if (target && target.IsMap() && value.IsMap()) {
    if (!force_add && !config_detail::keys_exist(target, value)) return false;
    config_detail::merge_into(target, value);
    return true;
  }
  if (!target && !force_add) return false;
  node[path.back()] = YAML::Clone(value);
  return true;
}

// The value at `path` as OmegaConf.select(throw_on_missing=False) sees it: missing keys,
// nulls and `???` are all "nothing there" (std::nullopt).
std::optional<Located> select(Resolver& resolver, const std::vector<std::string>& path) {
  const auto found = resolver.find(path);
  if (!found) return std::nullopt;
  const Located value = resolver.dereference(*found);
  if (value.node.IsNull() || config_detail::is_missing(value.node)) return std::nullopt;
  return value;
}

void delete_value(YAML::Node& root, const Override& parsed, const std::vector<std::string>& path) {
  Resolver resolver(root);
  const auto current = select(resolver, path);
  if (!current) throw ConfigError("Could not delete from config. '" + parsed.key + "' does not exist.");
  const YAML::Node value = resolver.resolve_tree(*current);
  if (parsed.has_value && !config_detail::values_equal(value, parsed.value)) {
    throw ConfigError(
        "Could not delete from config. The value of '" + parsed.key + "' is " +
        config_detail::python_str(value) + " and not " + config_detail::python_str(parsed.value) + ".");
  }
  const std::vector<std::string> parent_path(path.begin(), path.end() - 1);
  YAML::Node parent = resolver.dereference(*resolver.find(parent_path)).node;
  if (!parent.IsMap())
    throw ConfigError("Could not delete from config. '" + parsed.key + "' is not in a mapping.");
  parent.remove(path.back());
}

// OmegaConf merges an override's list or mapping into what the key holds: a list into a mapping,
// or a mapping into a list, is an error there, not a replacement.
void check_container_kind(YAML::Node& root, const Override& parsed, const std::vector<std::string>& path) {
  Resolver resolver(root);
  const auto current = select(resolver, path);
  if (!current) return;
  const YAML::Node& held = current->node;
  if (!(held.IsMap() && parsed.value.IsSequence()) && !(held.IsSequence() && parsed.value.IsMap())) return;
  const std::string value = parsed.input.substr(parsed.input.find_first_not_of("+"));
  throw ConfigError(
      "Error merging override " + parsed.input + ": '" + parsed.key + "' holds a " +
      (held.IsMap() ? "mapping, which a list" : "list, which a mapping") +
      " cannot be merged into. To replace it: ~" + parsed.key + " +" + value);
}

void apply_value_override(YAML::Node& root, const Override& parsed) {
  if (parsed.package) {
    throw ConfigError(
        "Override '" + parsed.input + "' looks like a config group override, but config group '" +
        parsed.key + "' does not exist.");
  }
  const std::vector<std::string> path = config_detail::split_key(parsed.key);
  if (parsed.kind != OverrideKind::kDelete) check_container_kind(root, parsed, path);
  switch (parsed.kind) {
    case OverrideKind::kDelete:
      delete_value(root, parsed, path);
      return;
    case OverrideKind::kAdd:
      // Adding over a set value is an error, unless a dict or list is merged in.
      if (Resolver resolver(root);
          select(resolver, path) && !parsed.value.IsMap() && !parsed.value.IsSequence()) {
        throw ConfigError(
            "Could not append to config. An item is already at '" + parsed.key +
            "'. Either remove + prefix: '" + parsed.input.substr(1) +
            "', or add a second + to add or override '" + parsed.key + "': '+" + parsed.input + "'");
      }
      [[fallthrough]];
    case OverrideKind::kForceAdd:
      if (!update(root, path, parsed.value, true)) {
        throw ConfigError(
            "Error merging override " + parsed.input + ": '" + parsed.key +
            "' names no item of its list (a list takes no new items by index)");
      }
      return;
    case OverrideKind::kChange:
      if (!update(root, path, parsed.value, false)) {
        const std::string nearest = config_detail::nearest_key(parsed.key, config_detail::all_keys(root));
        throw ConfigError(
            "Could not override '" + parsed.key + "'." +
            (nearest.empty() || nearest == parsed.key ? "" : " Did you mean '" + nearest + "'?") +
            " To append to your config use +" + parsed.input);
      }
      return;
  }
}

// Appends to `found` the keys of `overlay` that `base` lacks, outermost only, as dotted paths.
void collect_new_keys(
    const YAML::Node& base,
    const YAML::Node& overlay,
    const std::string& prefix,
    std::vector<std::string>& found) {
  for (auto it = overlay.begin(); it != overlay.end(); ++it) {
    const std::string key = prefix + it->first.Scalar();
    const YAML::Node existing = config_detail::find_child(base, it->first.Scalar());
    if (!existing) {
      found.push_back(key);
    } else if (existing.IsMap() && it->second.IsMap()) {
      collect_new_keys(existing, it->second, key + ".", found);
    }
  }
}

}  // namespace

Composition compose(const ComposeRequest& request) {
  std::error_code unreadable;  // a path too long to look up is as missing
  if (!std::filesystem::is_directory(request.config_dir, unreadable)) {
    throw ConfigError(
        "Primary config directory not found. Check that the config directory '" +
        request.config_dir.string() + "' exists and readable");
  }
  config_detail::ConfigRepository repo(request.config_dir);
  std::vector<Override> group_overrides;
  std::vector<Override> value_overrides;
  for (const auto& text : request.overrides) {
    Override parsed = config_detail::parse_override(text);
    config_detail::reject_sweep(parsed);
    // A dict value always edits the config, even under a group's name (`db={user:root}`).
    const bool is_group = repo.group_exists(parsed.key) && !parsed.value.IsMap();
    (is_group ? group_overrides : value_overrides).push_back(std::move(parsed));
  }
  std::string config_name = request.config_name;
  if (config_name.size() > 5 && config_name.compare(config_name.size() - 5, 5, ".yaml") == 0) {
    config_name.resize(config_name.size() - 5);
  }
  config_detail::DefaultsList defaults =
      config_detail::build_defaults_list(repo, config_name, group_overrides);

  YAML::Node root(YAML::NodeType::Map);
  for (const auto& entry : defaults.entries) {
    config_detail::merge_into(root, embed(repo.load(entry.config_path)->content, entry.package));
  }
  std::vector<std::string> overlay_only_keys;
  if (request.overlay.IsMap()) {
    collect_new_keys(root, request.overlay, "", overlay_only_keys);
    config_detail::merge_into(root, request.overlay);
  }
  for (const auto& parsed : value_overrides) apply_value_override(root, parsed);
  return Composition{
      Config(root), std::move(defaults.entries), std::move(defaults.choices), std::move(overlay_only_keys)};
}

std::vector<std::string> group_options(const std::filesystem::path& config_dir, const std::string& group) {
  return config_detail::ConfigRepository(config_dir).group_options(group);
}

}  // namespace saccade
