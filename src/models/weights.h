// Weights: a module's parameters and buffers to and from safetensors files, by name.
//
//   StateDictReport report = load_state_dict(*resnet, SafetensorsReader("resnet50.safetensors"),
//                                            {.ignored_prefixes = {"fc."}});
//   save_state_dict(*resnet, "resnet50.safetensors");
//
// Names are LibTorch's dotted paths ("layer1.0.conv1.weight"), which our modules keep equal to
// torchvision's, so a torchvision or timm state_dict exported to safetensors loads by name. Values
// are converted to the module's dtype (f16/bf16 files load into f32 modules). A mismatch is one
// std::invalid_argument listing every missing, unexpected and shape-mismatched key.
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "io/safetensors.h"

namespace saccade {

struct LoadStateDictOptions {
  // File keys starting with one of these are skipped silently: the parts of a network an encoder
  // cuts off ("fc.", "classifier."), so a full torchvision state_dict loads as-is.
  std::vector<std::string> ignored_prefixes;
  // Module keys ending in one of these may be absent from the file (timm files carry no
  // BatchNorm "num_batches_tracked"; eval-mode BatchNorm never reads it).
  std::vector<std::string> optional_suffixes = {"num_batches_tracked"};
  // When true (the default) any missing, unexpected or mismatched key throws before any value
  // is copied; when false the matching keys are loaded and the report says what was not.
  bool strict = true;
  // What the module is, for error messages ("encoder resnet50").
  std::string destination = "the module";
};

// What a load found. Keys are sorted.
struct StateDictReport {
  std::vector<std::string> loaded;      // module keys that received a value
  std::vector<std::string> missing;     // module keys absent from the file
  std::vector<std::string> unexpected;  // file keys the module lacks (ignored prefixes excluded)
  std::vector<std::string> mismatched;  // "conv1.weight: file [64, 3, 3, 3], module [64, 3, 7, 7]"
  std::vector<std::string> ignored;     // file keys skipped by an ignored prefix

  bool ok() const { return missing.empty() && unexpected.empty() && mismatched.empty(); }
  // One sentence listing the problems (the first 8 keys of each kind, then a count).
  std::string problems() const;
};

// Copies every parameter and buffer of `module` from `file` (under no-grad). A file whose keys all
// start with "module." (saved from DataParallel) has that prefix stripped first. A tensor holding
// a NaN or an infinity is a std::invalid_argument naming the file and the key, before anything is
// copied.
StateDictReport load_state_dict(
    torch::nn::Module& module, const SafetensorsReader& file, const LoadStateDictOptions& options = {});

// Writes every parameter and buffer of `module` under its dotted name, in its own dtype.
void save_state_dict(const torch::nn::Module& module, const std::filesystem::path& path);

// The number of values in `module`'s parameters (buffers such as BatchNorm's statistics not counted).
int64_t parameter_count(const torch::nn::Module& module);

}  // namespace saccade
