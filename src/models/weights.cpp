// Loading and saving module state as safetensors, with a full report of mismatched keys.
#include "models/weights.h"

#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <map>
#include <stdexcept>

#include "base/text.h"

namespace saccade {
namespace {

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string list_text(const std::vector<std::string>& items) {
  constexpr size_t kShown = 8;
  std::string text;
  for (size_t i = 0; i < items.size() && i < kShown; ++i) text += (i ? ", " : "") + items[i];
  if (items.size() > kShown) text += ", ... " + std::to_string(items.size() - kShown) + " more";
  return text;
}

// Every parameter and buffer, by dotted name.
std::map<std::string, torch::Tensor> module_state(const torch::nn::Module& module) {
  std::map<std::string, torch::Tensor> state;
  for (const auto& item : module.named_parameters(/*recurse=*/true)) state[item.key()] = item.value();
  for (const auto& item : module.named_buffers(/*recurse=*/true)) state[item.key()] = item.value();
  return state;
}

}  // namespace

std::string StateDictReport::problems() const {
  std::string text;
  auto add =
      [&text](const std::vector<std::string>& keys, const std::string& singular, const std::string& plural) {
        if (keys.empty()) return;
        text += (text.empty() ? "" : "; ") + std::to_string(keys.size()) + " " +
                (keys.size() == 1 ? singular : plural) + " (" + list_text(keys) + ")";
      };
  add(missing, "missing key", "missing keys");
  add(unexpected, "unexpected key", "unexpected keys");
  add(mismatched, "shape mismatch", "shape mismatches");
  return text.empty() ? "no problems" : text;
}

StateDictReport load_state_dict(
    torch::nn::Module& module, const SafetensorsReader& file, const LoadStateDictOptions& options) {
  // File key -> module key, after stripping a DataParallel "module." prefix from every key.
  const std::vector<std::string> file_keys = file.keys();
  const bool strip =
      !file_keys.empty() && std::all_of(file_keys.begin(), file_keys.end(), [](const std::string& key) {
        return starts_with(key, "module.");
      });
  std::map<std::string, std::string> by_module_key;
  StateDictReport report;
  for (const auto& key : file_keys) {
    const std::string name = strip ? key.substr(7) : key;
    const bool skip = std::any_of(
        options.ignored_prefixes.begin(), options.ignored_prefixes.end(),
        [&name](const std::string& prefix) { return starts_with(name, prefix); });
    if (skip) {
      report.ignored.push_back(name);
    } else {
      by_module_key[name] = key;
    }
  }

  const std::map<std::string, torch::Tensor> state = module_state(module);
  std::vector<std::pair<torch::Tensor, std::string>> copies;  // (destination, file key)
  for (const auto& [name, tensor] : state) {
    const auto it = by_module_key.find(name);
    if (it == by_module_key.end()) {
      const bool optional = std::any_of(
          options.optional_suffixes.begin(), options.optional_suffixes.end(),
          [&name](const std::string& suffix) { return ends_with(name, suffix); });
      if (!optional) report.missing.push_back(name);
      continue;
    }
    const SafetensorsEntry& entry = file.entry(it->second);
    if (torch::IntArrayRef(entry.shape) != tensor.sizes()) {
      report.mismatched.push_back(
          name + ": file " + shape_text(entry.shape) + ", module " + shape_text(tensor.sizes().vec()));
    } else {
      copies.emplace_back(tensor, it->second);
      report.loaded.push_back(name);
    }
    by_module_key.erase(it);
  }
  for (const auto& [name, key] : by_module_key) report.unexpected.push_back(name);
  std::sort(report.ignored.begin(), report.ignored.end());

  if (options.strict && !report.ok()) {
    throw std::invalid_argument(
        "Weights file '" + file.path().string() + "' does not fit " + options.destination + ": " +
        report.problems() + ". HINT: check that the weights were exported for this architecture");
  }
  torch::NoGradGuard no_grad;
  // Damaged weights would decode every caption empty and score 0 without a word: all are checked
  // before any is copied.
  for (const auto& [destination, key] : copies) {
    const torch::Tensor value = file.get(key);
    if (value.is_floating_point() && !torch::isfinite(value).all().item<bool>()) {
      throw std::invalid_argument(
          "Weights file '" + file.path().string() + "' holds a NaN or infinite value in '" + key +
          "': it cannot be " + options.destination);
    }
  }
  for (auto& [destination, key] : copies) destination.copy_(file.get(key));
  return report;
}

void save_state_dict(const torch::nn::Module& module, const std::filesystem::path& path) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (const auto& [name, tensor] : module_state(module)) tensors.emplace_back(name, tensor);
  save_safetensors(path, tensors);
}

int64_t parameter_count(const torch::nn::Module& module) {
  int64_t count = 0;
  for (const auto& parameter : module.parameters()) count += parameter.numel();
  return count;
}

}  // namespace saccade
