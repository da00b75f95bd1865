// OmegaConf interpolation: parsing `${...}` in strings and evaluating it against the tree.
#include "config/interpolation.h"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <map>
#include <mutex>
#include <string_view>

#include "config/config.h"
#include "config/overrides.h"
#include "config/yaml_tree.h"

namespace saccade::config_detail {
namespace {

// What opens an interpolation, named once: its brace is never counted as code's.
constexpr std::string_view kOpening = "${";

std::string trim(const std::string& text) {
  const size_t first = text.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(" \t") - first + 1);
}

std::string where(const NodePath& at) {
  return " (from '" + join_key(at) + "')";
}

// Whether text[i] opens, lies inside or closes a quoted string (`quote`: the open quote's
// character, 0 outside), stepping `i` past an escaped character: brackets count only outside.
bool within_quotes(const std::string& text, size_t& i, char& quote) {
  const char c = text[i];
  if (quote != 0) {
    if (c == '\\')
      ++i;
    else if (c == quote)
      quote = 0;
    return true;
  }
  if (c == '\'' || c == '"') {
    quote = c;
    return true;
  }
  return false;
}

// Splits resolver arguments at commas outside quotes, brackets and nested interpolations.
std::vector<std::string> split_arguments(const std::string& text) {
  std::vector<std::string> args;
  int depth = 0;
  char quote = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (within_quotes(text, i, quote)) continue;
    const char c = text[i];
    if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 0) {
      args.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  args.push_back(text.substr(start));
  return args;
}

// Local time of the first ${now:} in this process, formatted once per format (Hydra registers
// `now` as a cached resolver, so every read and every job of a sweep sees the same run time).
std::string now_text(const std::string& format) {
  static std::mutex mutex;
  static std::map<std::string, std::string> cache;
  static const std::time_t start = std::time(nullptr);
  std::lock_guard<std::mutex> lock(mutex);
  const auto found = cache.find(format);
  if (found != cache.end()) return found->second;
  std::tm local{};
  localtime_r(&start, &local);
  char buffer[512];
  const size_t length = std::strftime(buffer, sizeof(buffer), format.c_str(), &local);
  return cache[format] = std::string(buffer, length);
}

// Pops the interpolation being evaluated, also when evaluation throws.
class ActiveGuard {
 public:
  ActiveGuard(std::vector<NodePath>& active, const NodePath& path) : active_(active) {
    active_.push_back(path);
  }
  ~ActiveGuard() { active_.pop_back(); }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;

 private:
  std::vector<NodePath>& active_;
};

}  // namespace

// The index just past the '}' closing the "${" at `start`, or npos.
size_t interpolation_end(const std::string& text, size_t start) {
  int depth = 0;
  char quote = 0;
  for (size_t i = start; i < text.size(); ++i) {
    if (within_quotes(text, i, quote)) continue;
    const char c = text[i];
    if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i + 1;
    }
  }
  return std::string::npos;
}

Resolver::Resolver(const YAML::Node& root) : root_(root) {}

std::optional<Located> Resolver::find(const NodePath& path) {
  Located current{root_, {}};
  for (const auto& segment : path) {
    const Located container = dereference(current);
    const YAML::Node child = find_child(container.node, segment);
    if (!child) return std::nullopt;
    NodePath child_path = container.path;
    child_path.push_back(segment);
    current = Located{child, child_path, container.computed};
  }
  return current;
}

Located Resolver::dereference(const Located& at) {
  if (at.computed || !is_interpolation(at.node)) return at;
  const auto cycle = std::find(active_.begin(), active_.end(), at.path);
  if (cycle != active_.end()) {
    std::string chain;
    for (auto it = cycle; it != active_.end(); ++it) chain += join_key(*it) + " -> ";
    throw ConfigError("Recursive interpolation detected: " + chain + join_key(at.path));
  }
  ActiveGuard guard(active_, at.path);
  return evaluate(at.node.Scalar(), at.path);
}

YAML::Node Resolver::resolve_tree(const Located& at, OnMissing on_missing) {
  std::optional<Located> dereferenced;
  try {
    dereferenced.emplace(dereference(at));
  } catch (const InterpolationToMissingValue&) {
    if (on_missing == OnMissing::kError) throw;
    return YAML::Node("???");
  }
  const Located& value = *dereferenced;
  if (!value.node.IsMap() && !value.node.IsSequence()) return YAML::Clone(value.node);
  // A value that interpolates a container holding it would expand without end.
  if (std::find(expanding_.begin(), expanding_.end(), value.path) != expanding_.end()) {
    throw ConfigError(
        "Recursive interpolation detected: " + join_key(at.path) + " refers to " + join_key(value.path) +
        ", which contains it");
  }
  ActiveGuard guard(expanding_, value.path);
  YAML::Node out(value.node.IsMap() ? YAML::NodeType::Map : YAML::NodeType::Sequence);
  size_t index = 0;
  for (auto it = value.node.begin(); it != value.node.end(); ++it, ++index) {
    NodePath child_path = value.path;
    if (value.node.IsMap()) {
      child_path.push_back(it->first.Scalar());
      out[it->first.Scalar()] = resolve_tree(Located{it->second, child_path, value.computed}, on_missing);
    } else {
      child_path.push_back(std::to_string(index));
      out.push_back(resolve_tree(Located{*it, child_path, value.computed}, on_missing));
    }
  }
  return out;
}

// A string that is exactly one interpolation takes the value's type; anything else is a string.
Located Resolver::evaluate(const std::string& text, const NodePath& at) {
  if (text.rfind(kOpening, 0) == 0 && interpolation_end(text, 0) == text.size()) {
    size_t pos = 0;
    return interpolation(text, pos, at);
  }
  return Located{string_node(interpolate_string(text, at)), at, true};
}

std::string Resolver::interpolate_string(const std::string& text, const NodePath& at) {
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    size_t run = 0;
    while (i + run < text.size() && text[i + run] == '\\') ++run;
    const bool before_interpolation = text.compare(i + run, kOpening.size(), kOpening) == 0;
    if (run > 0 && !before_interpolation) {
      out.append(run, '\\');
      i += run;
      continue;
    }
    if (!before_interpolation) {
      out += text[i++];
      continue;
    }
    // Backslashes before an opening escape each other in pairs; an odd one escapes the opening.
    out.append(run / 2, '\\');
    i += run;
    if (run % 2 == 1) {
      out += kOpening;
      i += kOpening.size();
      continue;
    }
    const Located value = interpolation(text, i, at);
    out += python_str(resolve_tree(value));
  }
  return out;
}

Located Resolver::interpolation(const std::string& text, size_t& pos, const NodePath& at) {
  // Each interpolation inside another, or reached through a key, is a level of recursion: as deep
  // as a YAML file may nest, no deeper.
  struct Nesting {
    int& depth;
    ~Nesting() { --depth; }
  } nesting{++nesting_};
  if (nesting_ > kMaxYamlDepth) {
    throw ConfigError(
        "Interpolations nest deeper than " + std::to_string(kMaxYamlDepth) + " levels" + where(at));
  }
  const size_t end = interpolation_end(text, pos);
  if (end == std::string::npos) throw ConfigError("Unterminated interpolation in '" + text + "'" + where(at));
  const std::string inner =
      text.substr(pos + kOpening.size(), end - pos - kOpening.size() - 1);  // without the braces
  pos = end;
  // The head up to the first top-level ':' is a resolver name; without one it is a key, whose
  // nested interpolations are evaluated to build it.
  std::string head;
  size_t i = 0;
  while (i < inner.size() && inner[i] != ':') {
    if (inner.compare(i, kOpening.size(), kOpening) == 0) {
      // A nested interpolation names a key: as in OmegaConf, it must give a string.
      const size_t start = i;
      const YAML::Node part = resolve_tree(interpolation(inner, i, at));
      if (!part.IsScalar() || scalar_kind(part) != ScalarKind::kString) {
        static const char* const kPythonTypes[] = {"NoneType", "bool", "int", "float", "str"};
        const std::string type = part.IsMap()        ? "dict"
                                 : part.IsSequence() ? "list"
                                                     : kPythonTypes[static_cast<int>(scalar_kind(part))];
        throw ConfigError(
            "The following interpolation is used to denote a config key and thus should return a string, but "
            "instead returned `" +
            python_str(part) + "` of type `<class '" + type + "'>`: " + inner.substr(start, i - start) +
            where(at));
      }
      head += python_str(part);
    } else {
      head += inner[i++];
    }
  }
  head = trim(head);
  if (i == inner.size()) {
    if (head.empty()) throw ConfigError("Empty interpolation '" + text + "'" + where(at));
    const Located target = dereference(select(head, at));
    if (!target.computed && is_missing(target.node)) {
      throw InterpolationToMissingValue(
          "Missing mandatory value: " + join_key(target.path) + " (interpolated by '" + join_key(at) + "')");
    }
    return target;
  }
  std::vector<YAML::Node> args;
  const std::string arg_text = inner.substr(i + 1);
  if (!trim(arg_text).empty()) {
    for (const auto& arg : split_arguments(arg_text)) args.push_back(argument(arg, at));
  }
  return Located{call_resolver(head, args, at), at, true};
}

std::optional<Located> Resolver::find_key(const std::string& key, const NodePath& at) {
  const size_t dots =
      key.find_first_not_of('.') == std::string::npos ? key.size() : key.find_first_not_of('.');
  NodePath path;
  if (dots > 0) {
    // The first dot is the level of the node holding the interpolation; each further dot goes up.
    if (at.size() < dots) return std::nullopt;
    path.assign(at.begin(), at.end() - static_cast<long>(dots));
  }
  for (const auto& segment : split_key(key.substr(dots))) path.push_back(segment);
  return find(path);
}

Located Resolver::select(const std::string& key, const NodePath& at) {
  const auto found = find_key(key, at);
  if (!found) throw ConfigError("Interpolation key '" + key + "' not found" + where(at));
  return *found;
}

// The mapping at the key named by `resolver`'s argument (oc.dict.keys, oc.dict.values).
Located Resolver::dict_argument(
    const std::string& resolver, const std::vector<YAML::Node>& args, const NodePath& at) {
  if (args.size() != 1 || !args[0].IsScalar() || scalar_kind(args[0]) != ScalarKind::kString)
    throw ConfigError(resolver + " takes the key of a mapping" + where(at));
  const std::string& key = args[0].Scalar();
  const auto found = find_key(key, at);
  if (!found) throw ConfigError(resolver + ": key '" + key + "' not found" + where(at));
  const Located value = dereference(*found);
  if (!value.computed && is_missing(value.node))
    throw ConfigError(resolver + ": missing mandatory value: " + key + where(at));
  if (!value.node.IsMap()) throw ConfigError(resolver + ": '" + key + "' is not a mapping" + where(at));
  return value;
}

YAML::Node Resolver::argument(const std::string& text, const NodePath& at) {
  const std::string arg = trim(text);
  if (arg.empty()) return string_node("");
  const char first = arg.front();
  if ((first == '\'' || first == '"') && arg.size() >= 2 && arg.back() == first) {
    std::string body;
    for (size_t i = 1; i + 1 < arg.size(); ++i) {
      if (arg[i] == '\\' && i + 2 < arg.size() && arg[i + 1] == first) ++i;
      body += arg[i];
    }
    return string_node(body.find(kOpening) == std::string::npos ? body : interpolate_string(body, at));
  }
  if (arg.find(kOpening) != std::string::npos) return resolve_tree(evaluate(arg, at));
  try {
    return parse_value_element(arg);
  } catch (const ConfigError&) {
    throw ConfigError("Invalid resolver argument '" + arg + "'" + where(at));
  }
}

YAML::Node Resolver::call_resolver(
    const std::string& name, const std::vector<YAML::Node>& args, const NodePath& at) {
  if (name == "oc.env") {
    if (args.empty() || args.size() > 2)
      throw ConfigError("oc.env takes a variable name and an optional default" + where(at));
    const std::string variable = python_str(args[0]);
    if (const char* value = std::getenv(variable.c_str())) return string_node(value);
    if (args.size() == 1) throw ConfigError("Environment variable '" + variable + "' not found" + where(at));
    return args[1].IsNull() ? args[1] : string_node(python_str(args[1]));
  }
  if (name == "oc.decode") {
    if (args.size() != 1) throw ConfigError("oc.decode takes one string" + where(at));
    if (args[0].IsNull()) return args[0];
    if (!args[0].IsScalar() || scalar_kind(args[0]) != ScalarKind::kString) {
      throw ConfigError("oc.decode can only take strings or None as input" + where(at));
    }
    const std::string& text = args[0].Scalar();
    try {
      return parse_value_element(text);
    } catch (const ConfigError& error) {
      // The grammar's reason, without its "Error parsing override '<text>': ".
      const std::string reason = std::string(error.what()).substr(text.size() + 27);
      throw ConfigError("oc.decode cannot parse '" + text + "': " + reason + where(at));
    }
  }
  if (name == "oc.select") {
    // The value at a key (absolute, or relative with leading dots), else the default (null).
    if (args.empty() || args.size() > 2 || !args[0].IsScalar() || scalar_kind(args[0]) != ScalarKind::kString)
      throw ConfigError("oc.select takes a key and an optional default" + where(at));
    const auto found = find_key(args[0].Scalar(), at);
    const YAML::Node fallback = args.size() == 2 ? args[1] : YAML::Node(YAML::NodeType::Null);
    if (!found) return fallback;
    const Located value = dereference(*found);
    if (!value.computed && is_missing(value.node)) return fallback;
    return resolve_tree(value);
  }
  if (name == "oc.dict.keys" || name == "oc.dict.values") {
    const Located dict = dict_argument(name, args, at);
    YAML::Node list(YAML::NodeType::Sequence);
    for (auto it = dict.node.begin(); it != dict.node.end(); ++it) {
      NodePath child = dict.path;
      child.push_back(it->first.Scalar());
      list.push_back(
          name == "oc.dict.keys" ? string_node(it->first.Scalar())
                                 : resolve_tree(Located{it->second, child, dict.computed}));
    }
    return list;
  }
  if (name == "oc.create") {
    // A mapping or list as it is; a string is read as YAML, as OmegaConf.create reads one.
    if (args.size() != 1) throw ConfigError("oc.create takes one mapping, list or YAML string" + where(at));
    YAML::Node created = args[0];
    if (created.IsScalar() && scalar_kind(created) == ScalarKind::kString) {
      try {
        created.reset(YAML::Load(created.Scalar()));
      } catch (const YAML::Exception& error) {
        throw ConfigError("oc.create cannot read '" + args[0].Scalar() + "': " + error.msg + where(at));
      }
    }
    if (!created.IsMap() && !created.IsSequence())
      throw ConfigError("oc.create takes a mapping, a list or a YAML string of one" + where(at));
    return created;
  }
  if (name == "now") {
    if (args.size() != 1) throw ConfigError("now takes one strftime format" + where(at));
    return string_node(now_text(python_str(args[0])));
  }
  throw ConfigError("Unsupported interpolation type " + name + where(at));
}

}  // namespace saccade::config_detail
