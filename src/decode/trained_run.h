// A trained run, loaded once: what `saccade eval`, `caption`, `visualize` and the end of training
// need to apply a run's best checkpoint.
//
//   ComposeRequest today{config_dir, "config", {"decode.beam_size=5"}};   // the caller's overrides
//   TrainedRun run = load_trained_run("experiments/shapes_soft/2026-...", today);
//   run.model, run.vocabulary, run.dataset, run.search, run.config.get<...>(...)
//
// The run's config is composed as Hydra would compose one more file: today's defaults (with the
// run's group choices from its run.yaml, where it has one), then the run's saved config over
// them, then the caller's overrides. A run saved before a key existed therefore loads with
// today's default for it, and the command line still wins; a saved key today's configs do not
// have is kept and named in a one-line warning. The overrides may change how the model is used
// (decode.*, eval.*, runtime.*), never the model: a group switch (decoder=soft on a Transformer
// run) or an architecture key (models/architecture_keys.h: decoder.heads, encoder.grid) that
// differs from the run's is refused in one line naming both values, before anything is loaded.
// The model is built from that config (encoder weights come from the checkpoint, never from
// encoder.weights) and loaded from <run>/checkpoints/best (or last), in eval mode.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "data/prepare.h"
#include "data/vocabulary.h"
#include "decode/search.h"
#include "device/placement.h"
#include "models/captioner.h"

namespace saccade {

struct TrainedRun {
  std::filesystem::path dir;         // the run folder (or a folder holding a copied checkpoints/)
  std::filesystem::path checkpoint;  // dir/checkpoints/best (or last)
  Config config;                     // today's defaults <- the run's saved config <- the overrides
  Vocabulary vocabulary;             // the checkpoint's
  Captioner model{nullptr};          // the checkpoint's weights, in eval mode, on placement.device
  Placement placement;               // where and in which precision the model decodes
  int64_t epoch = 0;                 // the epoch the checkpoint was saved after
  DatasetOptions dataset;            // the run's data; dataset.image is how the model saw images
  SearchOptions search;              // decode.* of `config`
};

// The group options the run chose (its run.yaml's `choices`) as overrides of today's groups
// ("decoder=transformer"), for the groups whose folder still has that option (a warning names one
// that does not); the experiment is left out, as its values are in the saved config. None for a
// run without run.yaml.
std::vector<std::string> run_choices(const std::filesystem::path& run_dir, const ComposeRequest& today);

// Loads `run_dir`/checkpoints/<checkpoint> (best, or last: the last finished epoch's) onto
// `placement` (this process's runtime.device and runtime.precision, not the ones the run trained
// with). `today` names the config folder, primary config and the caller's overrides. Throws
// std::invalid_argument for another checkpoint name, std::runtime_error (one line) for a missing
// or incomplete checkpoint or weights that do not fit its config and vocabulary; ConfigError for
// bad overrides or values, a group switch or an architecture key override.
TrainedRun load_trained_run(
    const std::filesystem::path& run_dir,
    const ComposeRequest& today,
    const Placement& placement = {},
    const std::string& checkpoint = "best");

}  // namespace saccade
