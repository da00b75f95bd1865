// The keys of a config that decide a captioning model's weights and what it computes with them
// (decoder.heads, encoder.grid, encoder.position; not dropout, encoder.weights or decode.*).
// A trained run's model is its checkpoint's, so eval, train.init_from and train.resume refuse a
// config that differs from it in one of these.
//
// The options readers (encoder_options_from, refiner_options_from, decoder_options_from) mark
// each such key where they read it, so the list is what they read and cannot drift from them:
//   options.heads = config.get<int64_t>(ArchitectureKeys::record(architecture, "decoder.heads"));
//
//   if (const auto difference = architecture_difference(saved, given))
//     fail(difference->key + "=" + difference->given + " ... " + difference->trained);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/config.h"

namespace saccade {

class ArchitectureKeys {
 public:
  // `key`, recorded in `keys` when given (once): what a reader wraps around a key it reads.
  static const char* record(ArchitectureKeys* keys, const char* key);

  const std::vector<std::string>& keys() const { return keys_; }

 private:
  std::vector<std::string> keys_;
};

// The architecture keys the readers read from `config`, in reading order: which ones depends on
// the config (a Transformer decoder's, not the LSTM's). A key a reader cannot read (missing in a
// run saved before it existed, or a bad value) ends that reader's keys: it names the key again
// when the model is built, and the keys before it, decoder.kind among them, are still compared.
std::vector<std::string> architecture_keys(const Config& config);

struct ArchitectureDifference {
  std::string key;      // "decoder.heads"
  std::string trained;  // its value in the trained run's config, as YAML flow text: "2", "[8, 8]"
  std::string given;    // and in the other config
};

// The first architecture key of either config whose value differs between them; a key one of
// them lacks (a run saved before it existed) is not compared.
std::optional<ArchitectureDifference> architecture_difference(const Config& trained, const Config& given);

}  // namespace saccade
