// Multirun sweeps: Hydra's basic sweeper (cartesian product, first key slowest) and the single-run check.
#include <fnmatch.h>

#include <algorithm>

#include "config/config.h"
#include "config/overrides.h"

namespace saccade {

namespace config_detail {

void reject_sweep(const Override& parsed) {
  if (parsed.sweep == SweepKind::kSimple) {
    throw ConfigError(
        "Ambiguous value for argument '" + parsed.input +
        "': 1. To use it as a list, use key=[value1,value2];"
        " 2. To use it as string, quote the value: key=\\'value1,value2\\';"
        " 3. To sweep over it, add --multirun to your command line");
  }
  if (parsed.sweep != SweepKind::kNone) {
    throw ConfigError("Sweep parameters '" + parsed.input + "' requires --multirun");
  }
}

}  // namespace config_detail

namespace {

// Python's fnmatch on POSIX: * ? [abc] [!abc], case-sensitive, and a backslash is no escape.
bool matches_any(const std::string& name, const std::vector<std::string>& patterns) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& pattern) {
    return fnmatch(pattern.c_str(), name.c_str(), FNM_NOESCAPE) == 0;
  });
}

}  // namespace

std::vector<std::vector<std::string>> expand_sweeps(
    const std::vector<std::string>& overrides, const std::filesystem::path& config_dir) {
  // One list of alternatives per key; a repeated key replaces the earlier one in its place.
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const auto& text : overrides) {
    const config_detail::Override parsed = config_detail::parse_override(text);
    const std::string key = parsed.key_element();
    std::vector<std::string> alternatives;
    if (parsed.sweep == config_detail::SweepKind::kNone) {
      alternatives.push_back(text);
    } else if (parsed.sweep == config_detail::SweepKind::kGlob) {
      for (const auto& option : group_options(config_dir, parsed.key)) {
        if (matches_any(option, parsed.glob.include) && !matches_any(option, parsed.glob.exclude))
          alternatives.push_back(key + "=" + option);
      }
      if (alternatives.empty())
        throw ConfigError(
            "The sweep '" + text + "' matches no option of the config group '" + parsed.key + "'");
    } else {
      for (const auto& value : parsed.sweep_values) alternatives.push_back(key + "=" + value);
      if (alternatives.empty()) throw ConfigError("The sweep '" + text + "' has no values: no job would run");
    }
    auto axis = axes.begin();
    while (axis != axes.end() && axis->first != key) ++axis;
    if (axis == axes.end()) {
      axes.emplace_back(key, alternatives);
    } else {
      axis->second = alternatives;
    }
  }
  std::vector<std::vector<std::string>> jobs = {{}};
  for (const auto& axis : axes) {
    std::vector<std::vector<std::string>> extended;
    for (const auto& job : jobs) {
      for (const auto& alternative : axis.second) {
        extended.push_back(job);
        extended.back().push_back(alternative);
      }
    }
    jobs = std::move(extended);
  }
  return jobs;
}

void reject_sweeps(const std::vector<std::string>& overrides) {
  for (const auto& text : overrides) config_detail::reject_sweep(config_detail::parse_override(text));
}

}  // namespace saccade
