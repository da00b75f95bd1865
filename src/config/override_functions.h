// Hydra 1.3's grammar functions (choice, range, glob, sort, tag and the casts) over the elements
// the override parser reads (not part of the public API).
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/overrides.h"

namespace saccade::config_detail {

// One value of a sweep.
struct SweepItem {
  YAML::Node value;
  std::string text;  // the value as override text, as a job gets it
};

struct RangeArgs {
  YAML::Node start, stop, step;
};

// One element of an override's value: a value, or a sweep with its values in order.
struct OverrideElement {
  YAML::Node node;
  SweepKind sweep = SweepKind::kNone;
  std::vector<SweepItem> items;
  std::optional<RangeArgs> range;  // a range sweep's arguments, which int() and float() convert
  GlobPatterns glob;               // a glob sweep's patterns
  std::string text;                // the element as typed
};

// A call's arguments in order: (argument name, or "" for a positional one; value).
using FunctionArgs = std::vector<std::pair<std::string, OverrideElement>>;

// Throws ConfigError "Error parsing override '<input>': <reason>".
[[noreturn]] void fail_override(const std::string& input, const std::string& reason);

// The grammar's typed primitive (INT, FLOAT, BOOL, NULL tokens) that `text` is, else undefined.
YAML::Node typed_primitive(const std::string& text);

// The element the function `name` gives for `args`, as Hydra's grammar_functions compute it;
// `input` (the whole override) is named in errors.
OverrideElement call_override_function(
    const std::string& name, const FunctionArgs& args, const std::string& input);

}  // namespace saccade::config_detail
