// OmegaConf interpolation over a yaml-cpp tree, evaluated lazily at read time (not part of the
// public API).
//
//   ${a.b}                   the node at a.b (absolute); ${.x} a sibling, ${..x} a parent's sibling
//   ${plans.${selected}}     nested interpolations build the key
//   x: ${a}                  a whole-value interpolation keeps the referenced type (may be a subtree)
//   p: /data/${name}_${n}    anything else is a string, values formatted with Python's str()
//   ${oc.env:VAR,default}    environment variable; default is a string or null
//   ${oc.decode:'[1,2]'}     parses a string with the override grammar
//   ${oc.select:key,default} the value at key, or default (null) when it is absent or `???`
//   ${oc.dict.keys:key}      a mapping's keys, or ${oc.dict.values:key} its values, as a list
//   ${oc.create:{a: 1}}      a mapping or list, or a YAML string read as one
//   ${now:%Y-%m-%d}          local time; one instant per process, each format formatted once
//   \${x}                    a literal "${x}"
//
// Errors (ConfigError): unknown keys, cycles ("Recursive interpolation detected: a -> b -> a"),
// interpolations to `???`, unknown resolvers, missing environment variables.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace saccade::config_detail {

// A node's key path from the root ({"train", "lr"}).
using NodePath = std::vector<std::string>;

// A node and where it sits; relative interpolations inside it resolve from `path`.
struct Located {
  YAML::Node node;
  NodePath path;
  bool computed = false;  // a value made by a resolver or string interpolation: never re-evaluated

  Located(const Located&) = default;
  // Rebinds `node` (YAML::Node's own operator= would overwrite the data it refers to).
  Located& operator=(const Located& other) {
    node.reset(other.node);
    path = other.path;
    computed = other.computed;
    return *this;
  }
};

// An interpolation whose target is a `???` value (OmegaConf's InterpolationToMissingValueError).
class InterpolationToMissingValue : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// The index just past the '}' closing the "${" at `start` (quotes and nested braces skipped), or
// npos when it is never closed.
size_t interpolation_end(const std::string& text, size_t start);

class Resolver {
 public:
  explicit Resolver(const YAML::Node& root);

  // The node at `path`, following interpolations of the containers on the way but not of the
  // node itself; nullopt when there is no such key.
  std::optional<Located> find(const NodePath& path);

  // The value of `at`: the node itself, or what its interpolation evaluates to (a referenced
  // node keeps its own location, so its relative interpolations still work).
  Located dereference(const Located& at);

  // A deep copy of the value of `at` with every interpolation resolved; `???` values are kept.
  // An interpolation that reaches a `???` value is an error, or under `kMarkMissing` becomes
  // `???` itself (OmegaConf.resolve, which `--cfg job --resolve` prints).
  enum class OnMissing { kError, kMarkMissing };
  YAML::Node resolve_tree(const Located& at, OnMissing on_missing = OnMissing::kError);

 private:
  Located evaluate(const std::string& text, const NodePath& at);
  std::string interpolate_string(const std::string& text, const NodePath& at);
  Located interpolation(const std::string& text, size_t& pos, const NodePath& at);
  // The node a key names from `at` (absolute, or relative with leading dots); select() throws
  // where find_key() gives nullopt.
  std::optional<Located> find_key(const std::string& key, const NodePath& at);
  Located select(const std::string& key, const NodePath& at);
  Located dict_argument(const std::string& resolver, const std::vector<YAML::Node>& args, const NodePath& at);
  YAML::Node argument(const std::string& text, const NodePath& at);
  YAML::Node call_resolver(const std::string& name, const std::vector<YAML::Node>& args, const NodePath& at);

  YAML::Node root_;
  std::vector<NodePath> active_;     // interpolations being evaluated, innermost last (cycle check)
  std::vector<NodePath> expanding_;  // containers resolve_tree is copying, innermost last (likewise)
  int nesting_ = 0;                  // interpolations being evaluated, in text or through keys
};

}  // namespace saccade::config_detail
