// Config: typed, path-addressed reads of the composed tree, resolving interpolations on read.
#include "config/config.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <type_traits>

#include "config/interpolation.h"
#include "config/yaml_tree.h"

namespace saccade {
namespace {

using config_detail::Located;
using config_detail::Resolver;
using config_detail::ScalarKind;

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

[[noreturn]] void unknown_key(const YAML::Node& root, const std::string& key) {
  const std::string nearest = config_detail::nearest_key(key, config_detail::all_keys(root));
  throw ConfigError(
      "Key '" + key + "' is not in the config" +
      (nearest.empty() ? "." : ". Did you mean '" + nearest + "'?"));
}

std::string describe(const YAML::Node& value) {
  if (value.IsMap()) return "a mapping";
  if (value.IsSequence()) return "a list";
  if (value.IsNull()) return "null";
  return "'" + value.Scalar() + "'";
}

[[noreturn]] void type_error(const std::string& key, const char* expected, const YAML::Node& value) {
  throw ConfigError(key + ": expected " + expected + ", got " + describe(value));
}

// One resolved scalar as T. Strings convert when their text does ("8" from ${oc.env:N,8}),
// as OmegaConf's typed nodes convert them.
template <typename T>
T scalar_as(const YAML::Node& value, const std::string& key) {
  if (config_detail::is_missing(value)) throw ConfigError("Missing mandatory value: " + key);
  const bool scalar = value.IsScalar();
  const std::string text = scalar ? value.Scalar() : "";
  // A string converts by Python's rules, a YAML number by YAML's (octal 017, 0x10, 1_000).
  const bool string = scalar && config_detail::scalar_kind(value) == config_detail::ScalarKind::kString;
  if constexpr (std::is_same_v<T, bool>) {
    const auto parsed = config_detail::parse_bool(text);
    if (!scalar || !parsed) type_error(key, "a boolean", value);
    return *parsed;
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!scalar) type_error(key, "a string", value);
    return config_detail::scalar_text(value);
  } else if constexpr (std::is_integral_v<T>) {
    const auto parsed = string ? config_detail::python_int(text) : config_detail::parse_int(text);
    if (!scalar || !parsed) type_error(key, "an integer", value);
    // An integer the setting's type cannot hold (dist.timeout_s=10000000000 in an int).
    if (*parsed > std::numeric_limits<T>::max())
      throw ConfigError(
          key + ": " + text + " is too large (at most " + std::to_string(std::numeric_limits<T>::max()) +
          ")");
    if (*parsed < std::numeric_limits<T>::min())
      throw ConfigError(
          key + ": " + text + " is too small (at least " + std::to_string(std::numeric_limits<T>::min()) +
          ")");
    return static_cast<T>(*parsed);
  } else {
    const auto parsed = string ? config_detail::python_float(text) : config_detail::parse_float(text);
    if (!scalar || !parsed) type_error(key, "a number", value);
    // No setting takes an infinity, a NaN or a subnormal (which arithmetic and the text formats
    // of the logs handle badly): refused here, once for every key.
    const double magnitude = std::fabs(*parsed);
    if (!std::isfinite(*parsed) || magnitude > std::numeric_limits<T>::max())
      type_error(key, "a finite number", value);
    if (magnitude != 0.0 && magnitude < std::numeric_limits<T>::min()) {
      char smallest[16];
      std::snprintf(smallest, sizeof(smallest), "%.2g", static_cast<double>(std::numeric_limits<T>::min()));
      throw ConfigError(
          key + ": " + text + " is too close to 0 (the smallest normal number is " + smallest +
          "); use 0 or a larger number");
    }
    return static_cast<T>(*parsed);
  }
}

// The resolved value as T (scalars and lists of scalars); a null value is nullopt.
template <typename T>
std::optional<T> read(const YAML::Node& root, const std::string& key) {
  Resolver resolver(root);
  const auto found = resolver.find(config_detail::split_key(key));
  if (!found) unknown_key(root, key);
  if constexpr (IsVector<T>::value) {
    const YAML::Node value = resolver.resolve_tree(*found);
    if (value.IsNull()) return std::nullopt;
    if (!value.IsSequence()) {
      if (config_detail::is_missing(value)) throw ConfigError("Missing mandatory value: " + key);
      type_error(key, "a list", value);
    }
    T out;
    for (size_t i = 0; i < value.size(); ++i) {
      out.push_back(scalar_as<typename T::value_type>(value[i], key + "." + std::to_string(i)));
    }
    return out;
  } else {
    const Located value = resolver.dereference(*found);
    if (value.node.IsNull()) return std::nullopt;
    return scalar_as<T>(value.node, key);
  }
}

}  // namespace

Config::Config(YAML::Node root) : root_(root && !root.IsNull() ? root : YAML::Node(YAML::NodeType::Map)) {}

template <typename T>
T Config::get(const std::string& key) const {
  std::optional<T> value = read<T>(root_, key);
  if (!value) throw ConfigError(key + ": expected a value, got null");
  return *value;
}

template <typename T>
std::optional<T> Config::get_optional(const std::string& key) const {
  return read<T>(root_, key);
}

bool Config::has(const std::string& key) const {
  return Resolver(root_).find(config_detail::split_key(key)).has_value();
}

std::vector<std::string> Config::keys(const std::string& key) const {
  Resolver resolver(root_);
  const auto found = resolver.find(config_detail::split_key(key));
  if (!found) unknown_key(root_, key);
  const Located value = resolver.dereference(*found);
  if (!value.node.IsMap()) type_error(key.empty() ? "<root>" : key, "a mapping", value.node);
  std::vector<std::string> out;
  for (auto it = value.node.begin(); it != value.node.end(); ++it) out.push_back(it->first.Scalar());
  return out;
}

YAML::Node Config::resolved(const std::string& key) const {
  Resolver resolver(root_);
  const auto found = resolver.find(config_detail::split_key(key));
  if (!found) unknown_key(root_, key);
  return resolver.resolve_tree(*found);
}

std::string Config::to_yaml(bool resolve) const {
  if (!resolve) return config_detail::emit_yaml(root_);
  Resolver resolver(root_);
  return config_detail::emit_yaml(
      resolver.resolve_tree(*resolver.find({}), Resolver::OnMissing::kMarkMissing));
}

#define SACCADE_CONFIG_INSTANTIATE(T)                  \
  template T Config::get<T>(const std::string&) const; \
  template std::optional<T> Config::get_optional<T>(const std::string&) const;

SACCADE_CONFIG_INSTANTIATE(bool)
SACCADE_CONFIG_INSTANTIATE(int)
SACCADE_CONFIG_INSTANTIATE(int64_t)
SACCADE_CONFIG_INSTANTIATE(float)
SACCADE_CONFIG_INSTANTIATE(double)
SACCADE_CONFIG_INSTANTIATE(std::string)
SACCADE_CONFIG_INSTANTIATE(std::vector<int>)
SACCADE_CONFIG_INSTANTIATE(std::vector<int64_t>)
SACCADE_CONFIG_INSTANTIATE(std::vector<float>)
SACCADE_CONFIG_INSTANTIATE(std::vector<double>)
SACCADE_CONFIG_INSTANTIATE(std::vector<std::string>)
#undef SACCADE_CONFIG_INSTANTIATE

}  // namespace saccade
