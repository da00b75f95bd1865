// Hydra's defaults list: defaults tree, overrides of group choices, flattening.
#include "config/defaults_list.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"
#include "config/text_cursor.h"
#include "config/yaml_tree.h"

namespace saccade::config_detail {
namespace {

using Choice = std::pair<std::string, std::optional<std::string>>;

// The option(s) a group default selects: a name, null, or a list of names.
struct GroupValue {
  std::optional<std::string> name;
  std::vector<std::string> options;
  bool is_options = false;
};

std::string python_text(const std::optional<std::string>& name) {
  return name ? *name : "None";
}

// Python's str() of a group value, as Hydra prints it in hints.
std::string python_text(const GroupValue& value) {
  if (!value.is_options) return python_text(value.name);
  std::string out = "[";
  for (const auto& option : value.options) out += (out.size() > 1 ? ", '" : "'") + option + "'";
  return out + "]";
}

std::string strip_slash(const std::string& path) {
  return path.rfind('/', 0) == 0 ? path.substr(1) : path;
}

std::string dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// One entry of a defaults list: a group default (`group@pkg: option`) or a config default
// (`path/to/config`, `_self_`), with Hydra's path and package arithmetic.
struct InputDefault {
  bool is_group = false;
  std::string group;                   // group default: as written, "/" prefix = absolute
  std::string path;                    // config default: as written
  std::optional<std::string> package;  // "@pkg", relative to the parent's package
  GroupValue value;                    // group default only
  bool optional = false;
  bool is_override = false;
  bool external_append = false;  // `+group=x` from the command line
  bool primary = false;
  bool deleted = false;
  // Set when the entry is bound to the file that lists it.
  std::string parent_base_dir;
  std::string parent_package;
  std::optional<std::string> package_header;  // absolute: "_global_" or "_global_.a.b"

  bool is_self() const { return !is_group && path == "_self_"; }

  std::optional<std::string> name() const {
    if (is_group) return value.name;
    const size_t slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  }

  bool is_missing() const { return name() == std::optional<std::string>("???"); }

  bool is_interpolation() const {
    const auto current = name();
    return !(is_group && value.is_options) && current && current->find("${") != std::string::npos;
  }

  std::string relative_group_path() const {
    return is_group ? strip_slash(group) : dirname(strip_slash(path));
  }

  std::string group_path() const {
    const bool absolute = is_group ? (group.rfind('/', 0) == 0 || external_append) : path.rfind('/', 0) == 0;
    const std::string relative = relative_group_path();
    if (absolute || parent_base_dir.empty()) return relative;
    if (relative.empty()) return parent_base_dir;
    return parent_base_dir + "/" + relative;
  }

  std::string config_path() const {
    if (is_group) return group_path() + "/" + name().value_or("None");
    if (path.rfind('/', 0) == 0 || parent_base_dir.empty()) return strip_slash(path);
    return parent_base_dir + "/" + path;
  }

  std::string default_package() const {
    std::string out = group_path();
    std::replace(out.begin(), out.end(), '/', '.');
    return out;
  }

  // Where the content lands: the entry's package (or the file's header) under the parent's
  // package; anything up to the last `_global_` is dropped.
  std::string final_package(bool use_header = true) const {
    std::string own;
    if (package) {
      own = *package;
    } else if (use_header && package_header) {
      own = *package_header;
    } else {
      own = relative_group_path();
      std::replace(own.begin(), own.end(), '/', '.');
    }
    const std::string parent = (is_group && external_append) ? "" : parent_package;
    std::string out = parent.empty() ? own : (own.empty() ? parent : parent + "." + own);
    const size_t global = out.rfind("_global_");
    if (global == std::string::npos) return out;
    const size_t rest = global + std::string("_global_").size() + 1;
    return rest < out.size() ? out.substr(rest) : "";
  }

  // The key command-line overrides use for this entry: "db", or "db@backup" when relocated.
  std::string override_key() const {
    const std::string final = final_package(false);
    if (final == default_package()) return group_path();
    return group_path() + "@" + (final.empty() ? "_global_" : final);
  }
};

struct TreeNode {
  InputDefault node;
  std::vector<TreeNode> children;  // empty: a leaf, whose own content is merged
  std::optional<Choice> choice;    // (override key, option) of a group default
  bool deferred = false;           // an interpolated choice, built after its siblings
};

// A `${key}` in an interpolated choice, as the regex \$\{\s*([^{}]*?)\s*\} finds it: braces
// holding no brace.
struct ChoiceReference {
  size_t begin = 0;  // of the `$`
  size_t end = 0;    // just past the `}`
  std::string key;   // without the whitespace around it
};

std::vector<ChoiceReference> choice_references(const std::string& text) {
  std::vector<ChoiceReference> found;
  size_t begin = text.find("${");
  while (begin != std::string::npos) {
    const size_t close = text.find_first_of("{}", begin + 2);
    if (close == std::string::npos || text[close] == '{') {
      begin = text.find("${", begin + 1);
      continue;
    }
    std::string_view key(text.data() + begin + 2, close - begin - 2);
    while (!key.empty() && is_ascii_space(key.front())) key.remove_prefix(1);
    while (!key.empty() && is_ascii_space(key.back())) key.remove_suffix(1);
    found.push_back(ChoiceReference{begin, close + 1, std::string(key)});
    begin = text.find("${", close + 1);
  }
  return found;
}

// `group@pkg` -> (group, pkg); an empty package counts as none.
std::pair<std::string, std::optional<std::string>> split_package(const std::string& text) {
  const size_t at = text.find('@');
  if (at == std::string::npos || at + 1 == text.size()) return {text.substr(0, at), std::nullopt};
  std::string package = text.substr(at + 1);
  if (package == "_here_") package = "";
  return {text.substr(0, at), package};
}

std::vector<InputDefault> parse_defaults(const ConfigFile& file, const std::string& config_path) {
  std::vector<InputDefault> out;
  if (!file.defaults) return out;
  for (const auto& item : file.defaults) {
    InputDefault entry;
    if (item.IsScalar()) {
      std::tie(entry.path, entry.package) = split_package(item.Scalar());
    } else if (item.IsMap()) {
      if (item.size() != 1) {
        throw ConfigError("In " + config_path + ": Too many keys in default item " + python_str(item));
      }
      entry.is_group = true;
      std::string group;
      std::tie(group, entry.package) = split_package(item.begin()->first.Scalar());
      // Leading keywords: `optional`, `override`.
      std::istringstream words(group);
      std::vector<std::string> parts;
      for (std::string word; words >> word;) parts.push_back(word);
      while (parts.size() > 1 && (parts[0] == "optional" || parts[0] == "override")) {
        if (parts[0] == "optional") {
          entry.optional = true;
        } else {
          entry.is_override = true;
        }
        parts.erase(parts.begin());
      }
      entry.group = join(parts, " ");
      const YAML::Node value = item.begin()->second;
      if (value.IsSequence()) {
        entry.value.is_options = true;
        for (const auto& option : value) entry.value.options.push_back(option.Scalar());
      } else if (value.IsScalar()) {
        entry.value.name = value.Scalar();
      } else if (!value.IsNull()) {
        throw ConfigError(
            "In " + config_path + ": Unsupported item value in defaults : " + python_type(value) +
            ". Supported: string or list");
      }
    } else {
      throw ConfigError("In " + config_path + ": Unsupported type in defaults : " + python_type(item));
    }
    out.push_back(entry);
  }
  return out;
}

class DefaultsBuilder {
 public:
  DefaultsBuilder(ConfigRepository& repo, const std::vector<Override>& group_overrides) : repo_(repo) {
    for (const auto& group_override : group_overrides) add_command_line_override(group_override);
  }

  DefaultsList build(const std::string& config_name) {
    TreeNode root;
    root.node.path = config_name;
    root.node.primary = true;
    build_tree(root, nullptr, true, false);
    DefaultsList out;
    std::set<std::string> keys;
    collect_entries(root, nullptr, keys, out.entries);
    std::set<std::string> chosen;
    collect_choices(root, chosen, out.choices);
    ensure_overrides_used();
    ensure_deletions_used();
    return out;
  }

 private:
  struct OverrideChoice {
    std::string key;
    GroupValue value;
    bool external = false;               // from the command line
    std::string containing_config_path;  // else: the file holding `override key: value`
    bool used = false;
  };
  struct Deletion {
    std::string key;
    std::optional<std::string> name;  // delete only this option, if set
    bool used = false;
  };

  void add_command_line_override(const Override& group_override) {
    const std::string key =
        group_override.key + (group_override.package ? "@" + *group_override.package : "");
    if (group_override.kind == OverrideKind::kForceAdd) {
      throw ConfigError("force-add of config groups is not supported: '" + group_override.input + "'");
    }
    if (group_override.kind == OverrideKind::kDelete) {
      std::optional<std::string> name;
      if (group_override.has_value) {
        if (!group_override.value.IsScalar() || scalar_kind(group_override.value) != ScalarKind::kString) {
          throw ConfigError(
              "Config group override deletion value must be a string: '" + group_override.input + "'");
        }
        name = group_override.value.Scalar();
      }
      deletions_.erase(
          std::remove_if(
              deletions_.begin(), deletions_.end(), [&](const Deletion& d) { return d.key == key; }),
          deletions_.end());
      deletions_.push_back(Deletion{key, name});
      return;
    }
    GroupValue value;
    if (group_override.value.IsSequence()) {
      value.is_options = true;
      for (const auto& option : group_override.value) value.options.push_back(scalar_text(option));
    } else if (group_override.value.IsScalar() && scalar_kind(group_override.value) == ScalarKind::kString) {
      value.name = group_override.value.Scalar();
    } else {
      throw ConfigError(
          std::string("Config group override must be a string or a list. Got ") +
          python_type(group_override.value));
    }
    if (group_override.kind == OverrideKind::kAdd) {
      InputDefault entry;
      entry.is_group = true;
      entry.group = group_override.key;
      entry.package = group_override.package;
      entry.value = value;
      entry.external_append = true;
      appends_.push_back(entry);
      return;
    }
    OverrideChoice* existing = find_override(key);
    if (existing != nullptr) {
      existing->value = value;
    } else {
      override_choices_.push_back(OverrideChoice{key, value, true, "", false});
    }
  }

  OverrideChoice* find_override(const std::string& key) {
    for (auto& choice : override_choices_) {
      if (choice.key == key) return &choice;
    }
    return nullptr;
  }

  void override_default_option(InputDefault& entry) {
    if (!entry.is_group) return;
    if (OverrideChoice* choice = find_override(entry.override_key())) {
      entry.value = choice->value;
      choice->used = true;
    }
  }

  bool is_deleted(const InputDefault& entry) {
    if (!entry.is_group) return false;
    for (auto& deletion : deletions_) {
      if (deletion.key == entry.override_key() && (!deletion.name || deletion.name == entry.name())) {
        deletion.used = true;
        return true;
      }
    }
    return false;
  }

  void set_known_choice(TreeNode& tree) {
    const InputDefault& entry = tree.node;
    if (!entry.is_group) return;
    const std::string key = entry.override_key();
    const auto known = std::find_if(
        known_choices_.begin(), known_choices_.end(), [&](const Choice& c) { return c.first == key; });
    if (known == known_choices_.end()) {
      known_choices_.emplace_back(key, entry.name());
    } else if (known->second != entry.name()) {
      throw ConfigError(
          "Multiple values for " + key + ". To override a value use 'override " + key + ": " +
          python_text(known->second) + "'");
    }
    known_choices_per_group_[entry.group_path()].insert(key);
    tree.choice = Choice(key, entry.name());
  }

  void update_package_header(InputDefault& entry) {
    if (entry.is_missing() || !entry.name()) return;
    const ConfigFile* file = repo_.load(entry.config_path());
    if (file == nullptr || !file->package_header) return;
    const std::string& header = *file->package_header;
    // A header is absolute.
    if (header == "_global_" || header.rfind("_global_.", 0) == 0) {
      entry.package_header = header;
    } else {
      entry.package_header = header.empty() ? "_global_" : "_global_." + header;
    }
  }

  [[noreturn]] void config_not_found(const InputDefault& entry, const InputDefault* parent) {
    std::string message;
    if (entry.primary) {
      message = "Cannot find primary config '" + entry.config_path() +
                "'. Check that it's in your config search path. Config search path: " + repo_.dir().string();
    } else if (entry.is_group) {
      const std::string group = entry.group_path();
      const auto options = repo_.group_options(group);
      message = "Could not find '" + entry.config_path() + "'";
      if (!options.empty()) {
        message += ". Available options in '" + group + "': " + join(options, ", ");
      } else if (!repo_.group_exists(group)) {
        message += ". No config group '" + group + "' in " + repo_.dir().string();
      }
    } else {
      message = "Could not load '" + entry.config_path() + "'.";
    }
    if (parent != nullptr) message = "In '" + parent->config_path() + "': " + message;
    throw ConfigError(message);
  }

  void check_not_missing(const InputDefault& entry) {
    if (!entry.is_missing()) return;
    if (!entry.is_group) throw ConfigError("Missing ConfigDefault is not supported : " + entry.config_path());
    const std::string key = entry.override_key();
    throw ConfigError(
        "You must specify '" + key + "', e.g, " + key +
        "=<OPTION>. Available options: " + join(repo_.group_options(entry.group_path()), ", "));
  }

  // Appends `_self_` where the file has a (non-override) defaults list but no `_self_`.
  static void add_self(const InputDefault& parent, std::vector<InputDefault>& defaults) {
    bool has_self = false;
    bool has_non_override = false;
    for (const auto& entry : defaults) {
      has_non_override = has_non_override || !entry.is_override;
      if (entry.is_self()) {
        if (has_self) throw ConfigError("Duplicate _self_ defined in " + parent.config_path());
        has_self = true;
      }
    }
    if ((!has_self && has_non_override) || defaults.empty()) {
      InputDefault self;
      self.path = "_self_";
      defaults.push_back(self);
    }
  }

  // Binds every entry to `parent` and registers its `override` entries.
  void update_overrides(
      std::vector<InputDefault>& defaults, const InputDefault& parent, bool interpolated_subtree) {
    const InputDefault* last_override = nullptr;
    for (auto& entry : defaults) {
      if (entry.is_self()) continue;
      entry.parent_base_dir = parent.group_path();
      entry.parent_package = parent.final_package();
      if (last_override != nullptr && !entry.is_override && !entry.external_append) {
        throw ConfigError(
            "In " + parent.config_path() + ": Override '" + last_override->override_key() + " : " +
            python_text(last_override->name()) + "' is defined before '" + entry.override_key() + ": " +
            python_text(entry.name()) + "'. Overrides must be at the end of the defaults list");
      }
      if (!entry.is_group || !entry.is_override) continue;
      last_override = &entry;
      if (interpolated_subtree) {
        throw ConfigError(
            parent.config_path() +
            ": Default List Overrides are not allowed in the subtree of an interpolated config group "
            "(override " +
            entry.override_key() + "=" + python_text(entry.name()) + ").");
      }
      if (find_override(entry.override_key()) == nullptr) {
        override_choices_.push_back(
            OverrideChoice{entry.override_key(), entry.value, false, parent.config_path(), false});
      }
    }
  }

  // Replaces `${group}` in an interpolated choice, listed by the config `parent`, by that group's
  // known option.
  void resolve_interpolation(InputDefault& entry, const std::string& parent) {
    std::string& text = entry.is_group ? *entry.value.name : entry.path;
    const std::string original = text;
    std::string resolved;
    size_t last = 0;
    for (const ChoiceReference& reference : choice_references(text)) {
      resolved += text.substr(last, reference.begin - last);
      const auto known = std::find_if(known_choices_.begin(), known_choices_.end(), [&](const Choice& c) {
        return c.first == reference.key;
      });
      resolved += (known != known_choices_.end() && known->second)
                      ? *known->second
                      : text.substr(reference.begin, reference.end - reference.begin);
      last = reference.end;
    }
    resolved += text.substr(last);
    if (resolved.find("${") != std::string::npos) {
      std::vector<std::string> keys;
      for (const auto& known : known_choices_) keys.push_back(known.first);
      throw ConfigError(
          "In '" + parent + "': Error resolving interpolation '" + original + "'" +
          (keys.empty() ? "" : ", possible interpolation keys: " + join(keys, ", ")));
    }
    text = resolved;
  }

  void build_tree(
      TreeNode& tree, const InputDefault* parent, bool is_root_config, bool interpolated_subtree) {
    InputDefault& node = tree.node;
    if (is_root_config && repo_.load(node.config_path()) == nullptr) config_not_found(node, nullptr);
    update_package_header(node);
    if (is_deleted(node)) {
      node.deleted = true;
      return;
    }
    set_known_choice(tree);
    if (!node.name()) return;
    check_not_missing(node);
    const ConfigFile* file = repo_.load(node.config_path());
    if (file == nullptr) {
      if (!node.optional) config_not_found(node, parent);
      node.deleted = true;
      return;
    }
    std::vector<InputDefault> defaults = parse_defaults(*file, node.config_path());
    if (!defaults.empty() || (is_root_config && !appends_.empty())) add_self(node, defaults);
    if (is_root_config) defaults.insert(defaults.end(), appends_.begin(), appends_.end());
    update_overrides(defaults, node, interpolated_subtree);

    // Last to first, so that overrides in later entries apply to earlier ones.
    std::vector<TreeNode> children;
    for (auto it = defaults.rbegin(); it != defaults.rend(); ++it) {
      InputDefault& entry = *it;
      if (entry.is_self()) {
        children.push_back(TreeNode{entry, {}, std::nullopt, false});
        continue;
      }
      if (entry.is_override) continue;
      entry.parent_base_dir = node.group_path();
      entry.parent_package = node.final_package();
      override_default_option(entry);
      if (entry.is_group && entry.value.is_options) {
        const Choice choice(entry.override_key(), python_text(entry.value));
        for (auto option = entry.value.options.rbegin(); option != entry.value.options.rend(); ++option) {
          if (option->find("${") != std::string::npos) {
            throw ConfigError(
                "In '" + node.config_path() +
                "': Defaults List interpolation is not supported in options list items");
          }
          TreeNode child;
          child.node.path = entry.group + "/" + *option;
          child.node.package = entry.package;
          child.node.optional = entry.optional;
          child.node.parent_base_dir = entry.parent_base_dir;
          child.node.parent_package = entry.parent_package;
          child.choice = choice;
          build_tree(child, &node, false, interpolated_subtree);
          children.push_back(std::move(child));
        }
      } else {
        TreeNode child{entry, {}, std::nullopt, entry.is_interpolation()};
        if (!child.deferred) build_tree(child, &node, false, interpolated_subtree);
        children.push_back(std::move(child));
      }
    }
    for (auto& child : children) {
      if (!child.deferred) continue;
      resolve_interpolation(child.node, node.config_path());
      build_tree(child, &node, false, true);
    }
    std::reverse(children.begin(), children.end());
    tree.children = std::move(children);
  }

  // Depth-first: a node with children contributes them (its own content via `_self_`).
  void collect_entries(
      const TreeNode& tree,
      const TreeNode* parent,
      std::set<std::string>& keys,
      std::vector<DefaultsEntry>& out) {
    if (tree.children.empty()) {
      add_entry(parent, tree.node, keys, out);
      return;
    }
    for (const auto& child : tree.children) {
      if (!child.children.empty()) {
        collect_entries(child, &tree, keys, out);
      } else if (child.node.is_self()) {
        out.push_back(DefaultsEntry{
            tree.node.config_path(), tree.node.final_package(),
            parent != nullptr ? parent->node.config_path() : "", true});
      } else {
        add_entry(&tree, child.node, keys, out);
      }
    }
  }

  void add_entry(
      const TreeNode* parent,
      const InputDefault& entry,
      std::set<std::string>& keys,
      std::vector<DefaultsEntry>& out) {
    if (entry.deleted || entry.is_missing() || !entry.name()) return;
    if (entry.is_group && !keys.insert(entry.override_key()).second) {
      throw ConfigError(entry.override_key() + " appears more than once in the final defaults list");
    }
    out.push_back(DefaultsEntry{
        entry.config_path(), entry.final_package(), parent != nullptr ? parent->node.config_path() : "",
        false});
  }

  static void collect_choices(const TreeNode& tree, std::set<std::string>& seen, std::vector<Choice>& out) {
    if (tree.choice && seen.insert(tree.choice->first).second) out.push_back(*tree.choice);
    for (const auto& child : tree.children) collect_choices(child, seen, out);
  }

  void ensure_overrides_used() const {
    for (const auto& choice : override_choices_) {
      if (choice.used) continue;
      const std::string group = choice.key.substr(0, choice.key.find('@'));
      const auto found = known_choices_per_group_.find(group);
      const std::set<std::string> keys =
          found == known_choices_per_group_.end() ? std::set<std::string>() : found->second;
      std::string message = "Could not override '" + choice.key + "'.";
      if (keys.size() > 1) {
        message += " Did you mean to override one of " + join({keys.begin(), keys.end()}, ", ") + "?";
      } else if (keys.size() == 1) {
        message += " Did you mean to override " + *keys.begin() + "?";
      } else {
        message += " No match in the defaults list.";
      }
      if (!choice.external) message = "In '" + choice.containing_config_path + "': " + message;
      if (choice.external)
        message += " To append to your default list use +" + choice.key + "=" + python_text(choice.value);
      throw ConfigError(message);
    }
  }

  void ensure_deletions_used() const {
    for (const auto& deletion : deletions_) {
      if (deletion.used) continue;
      const std::string description = deletion.key + (deletion.name ? "=" + *deletion.name : "");
      throw ConfigError("Could not delete '" + description + "'. No match in the defaults list");
    }
  }

  ConfigRepository& repo_;
  std::vector<OverrideChoice> override_choices_;  // first registration of a key wins
  std::vector<Deletion> deletions_;
  std::vector<InputDefault> appends_;                                     // `+group=x`
  std::vector<Choice> known_choices_;                                     // in visiting order
  std::map<std::string, std::set<std::string>> known_choices_per_group_;  // group path -> keys
};

}  // namespace

DefaultsList build_defaults_list(
    ConfigRepository& repo, const std::string& config_name, const std::vector<Override>& group_overrides) {
  return DefaultsBuilder(repo, group_overrides).build(config_name);
}

}  // namespace saccade::config_detail
