// Parsing of command-line overrides with Hydra 1.3's override grammar (not part of the public API).
//
//   key=value     change an existing config value, or select a config group option
//   +key=value    add a value (or append a group to the defaults list)
//   ++key=value   add or change a value
//   ~key[=value]  delete a value or a group (only if it equals `value`, when given)
//
// Values: null; ints (10, -20, 1_000); floats (3.14, 1e-3, inf, nan); bools in any case;
// 'single' or "double" quoted strings; lists [a,[b,c]]; dicts {a:10,b:20}; interpolations
// ${a.b} kept as text; any other text (ASCII letters and digits, `_ - / + . $ % * @ ? | \ :`,
// blanks: Hydra's lexer refuses other characters unquoted) is a string with inner spaces kept,
// outer spaces trimmed and `\` escaping any of `\ ( ) [ ] { } : = ,` and space/tab.
// Sweeps: `a,b` (two or more elements at the top level), choice(a,b), range([start,]stop[,step]),
// glob(include[,exclude]), sort(...), tag(..., sweep); casts int(), float(), str(), bool() of
// values and sweeps (override_functions.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <vector>

namespace saccade::config_detail {

enum class OverrideKind { kChange, kAdd, kForceAdd, kDelete };
enum class SweepKind { kNone, kSimple, kChoice, kRange, kGlob };

// glob()'s patterns (Python's fnmatch: * ? [abc] [!abc]), matched against a group's options.
struct GlobPatterns {
  std::vector<std::string> include, exclude;
};

struct Override {
  OverrideKind kind = OverrideKind::kChange;
  std::string key;                     // "train.lr", "dataset", "server/db"
  std::optional<std::string> package;  // the "@pkg" of a group key
  std::string input;                   // the override as typed
  bool has_value = false;              // false only for `~key`
  // The parsed value of a non-sweep: a scalar (strings tagged "!"), sequence or mapping.
  YAML::Node value;
  SweepKind sweep = SweepKind::kNone;
  // Each element of a sweep as override text ("1", "'a,b'", "0.25"), in sweep order; for a glob,
  // the patterns, which the group's options meet when sweeping.
  std::vector<std::string> sweep_values;
  GlobPatterns glob;

  // The prefix, key and package as typed ("+db@backup"); Hydra's get_key_element().
  std::string key_element() const;
};

// Parses one override; throws ConfigError "Error parsing override '<text>': <reason>", also for a
// key, package or value nesting deeper than kMaxYamlDepth levels (yaml_tree.h).
Override parse_override(const std::string& text);

// Throws ConfigError if `parsed` is a sweep, with Hydra's message for single runs.
void reject_sweep(const Override& parsed);

// `text` with each character the grammar reads specially (\ ( ) [ ] { } : = , space, tab)
// escaped by a backslash, as Hydra writes a string into an override (escape_special_characters).
std::string escape_special_characters(const std::string& text);

// Parses `text` as one override value element (for the oc.decode resolver); sweeps not allowed.
YAML::Node parse_value_element(const std::string& text);

}  // namespace saccade::config_detail
