// Starting a run from another run's checkpoint: train.init_from (its best weights, a new run) and
// train.resume (its last state, the same run). Both refuse a checkpoint trained with other
// architecture keys (models/architecture_keys.h): loading would succeed wherever the weight shapes
// agree (decoder.heads, encoder.position) and silently train another model.
//
//   check_resumable(*options.resume, config_yaml);                // before loading checkpoints/last
//   initialize_from(*options.init_from, *model, vocabulary, config_yaml);
#pragma once

#include <torch/nn/module.h>

#include <filesystem>
#include <string>

#include "data/vocabulary.h"

namespace saccade {

// Loads `run`'s checkpoints/best weights into `model`, after checking that they were trained with
// this run's vocabulary and architecture keys (`config_yaml`: this run's resolved config). Throws
// std::invalid_argument, one line naming train.init_from, for anything that stops it (a missing
// or unreadable checkpoint included).
void initialize_from(
    const std::filesystem::path& run,
    torch::nn::Module& model,
    const Vocabulary& vocabulary,
    const std::string& config_yaml);

// Throws std::invalid_argument, one line naming train.resume, the key and both values, when
// `run`'s checkpoints/last was trained with architecture keys other than `config_yaml`'s.
void check_resumable(const std::filesystem::path& run, const std::string& config_yaml);

}  // namespace saccade
