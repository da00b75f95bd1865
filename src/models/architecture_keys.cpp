// architecture_keys and architecture_difference (see architecture_keys.h).
#include "models/architecture_keys.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "models/decoder.h"
#include "models/encoder.h"

namespace saccade {
namespace {

std::string yaml_flow_text(const Config& config, const std::string& key) {
  YAML::Emitter out;
  out << YAML::Flow << config.resolved(key);
  return out.c_str();
}

void add_architecture_keys(const Config& config, std::vector<std::string>& keys) {
  for (const auto& key : architecture_keys(config)) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
}

}  // namespace

const char* ArchitectureKeys::record(ArchitectureKeys* keys, const char* key) {
  if (keys != nullptr && std::find(keys->keys_.begin(), keys->keys_.end(), key) == keys->keys_.end())
    keys->keys_.emplace_back(key);
  return key;
}

std::vector<std::string> architecture_keys(const Config& config) {
  ArchitectureKeys keys;
  // Each reader's keys up to one it cannot read (see the header): an encoder key missing from an
  // old run does not hide the decoder's.
  try {
    encoder_options_from(config, &keys);  // the refiner's keys too
  } catch (const ConfigError&) {
  }
  try {
    decoder_options_from(config, &keys);
  } catch (const ConfigError&) {
  }
  return keys.keys();
}

std::optional<ArchitectureDifference> architecture_difference(const Config& trained, const Config& given) {
  std::vector<std::string> keys;
  add_architecture_keys(trained, keys);
  add_architecture_keys(given, keys);
  for (const auto& key : keys) {
    if (!trained.has(key) || !given.has(key)) continue;
    ArchitectureDifference difference{key, yaml_flow_text(trained, key), yaml_flow_text(given, key)};
    if (difference.trained != difference.given) return difference;
  }
  return std::nullopt;
}

}  // namespace saccade
