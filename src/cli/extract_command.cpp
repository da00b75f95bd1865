// `saccade extract`: runs the configured encoder over images once and stores the grids.
//
//   saccade extract encoder=resnet101 encoder.weights=r101.safetensors dataset=coco
//       -> every split's annotations as an f16 feature cache (data/feature_cache.h) in
//          --out DIR or <dataset.cache_dir>/features/<encoder.name>/<split>/
//   saccade extract --images photos/ --out grids.safetensors encoder=vgg19 encoder.weights=...
//       -> one f32 tensor [D, H', W'] per image, keyed by file name, in one safetensors file
// Images go through the configured pipeline (dataset.image.resize, crop, mean, std) first.
// runtime.precision=bf16 runs the encoder as kernels/inference_precision.h says (on the CPU:
// bf16 convolutions where it has AVX-512 BF16, float32 elsewhere).
#include <torch/types.h>
#include <torch/utils.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/command.h"
#include "data/feature_cache.h"
#include "data/image_pipeline.h"
#include "data/prepare.h"
#include "io/log.h"
#include "io/progress.h"
#include "io/safetensors.h"
#include "kernels/inference_precision.h"
#include "models/encoder.h"

namespace saccade::cli {
namespace {

constexpr int64_t kBatchSize = 16;  // images per encoder call

bool is_image_file(const std::filesystem::path& path) {
  std::string extension = path.extension().string();
  std::transform(
      extension.begin(), extension.end(), extension.begin(), [](unsigned char c) { return std::tolower(c); });
  static const std::set<std::string> kExtensions = {".jpg",  ".jpeg", ".png", ".bmp", ".tif", ".tiff",
                                                    ".webp", ".pnm",  ".ppm", ".pgm", ".pbm"};
  return kExtensions.count(extension) > 0;
}

// The files named, with each folder replaced by its image files (sorted, not recursive).
std::vector<std::filesystem::path> collect_images(const std::vector<std::string>& arguments) {
  std::vector<std::filesystem::path> images;
  for (const auto& argument : arguments) {
    const std::filesystem::path path(argument);
    if (std::filesystem::is_directory(path)) {
      std::vector<std::filesystem::path> found;
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (entry.is_regular_file() && is_image_file(entry.path())) found.push_back(entry.path());
      }
      if (found.empty())
        throw std::invalid_argument("No image files in folder '" + argument + "' (--images)");
      std::sort(found.begin(), found.end());
      images.insert(images.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(path)) {
      images.push_back(path);
    } else {
      throw std::invalid_argument("No such file or folder '" + argument + "' (--images)");
    }
  }
  return images;
}

// Says how the encoder runs images of the crop (oneDNN in float32 or bf16, or the modules).
void log_encoder_path(EncoderImpl& encoder, const ImageOptions& image, const c10::Device& device) {
  const auto images = torch::empty({1, 3, image.crop, image.crop}, torch::TensorOptions(device));
  log::info() << "Encoder " << encoder.name() << ": " << encoder.inference_path(images);
}

int extract_images(const Job& job, const EncoderOptions& encoder_options, const ImageOptions& image) {
  const Invocation& invocation = *job.invocation;
  std::vector<std::string> arguments = {invocation.flag("--images")};
  arguments.insert(arguments.end(), invocation.positional.begin(), invocation.positional.end());
  const std::string out = invocation.flag("--out");
  if (out.empty()) throw std::invalid_argument("saccade extract --images needs --out FILE.safetensors");
  const Config& cfg = job.composition.config;
  const bool skip_bad = cfg.get_parsed("data.on_bad_image", parse_bad_image_policy) == BadImagePolicy::skip;

  const std::vector<std::filesystem::path> paths = collect_images(arguments);
  std::map<std::string, std::filesystem::path> by_name;
  for (const auto& path : paths) {
    const auto [it, inserted] = by_name.emplace(path.filename().string(), path);
    if (!inserted) {
      throw std::invalid_argument(
          "Two images share the file name '" + path.filename().string() + "' (" + it->second.string() +
          " and " + path.string() + "); grids are keyed by file name");
    }
  }

  Encoder encoder = build_encoder(encoder_options);  // after the cheap checks above
  encoder->eval();
  encoder->to(job.placement.device);
  torch::InferenceMode inference;
  const InferencePrecision inference_precision(job.placement);
  log_encoder_path(*encoder, image, job.placement.device);
  std::vector<std::pair<std::string, torch::Tensor>> grids;
  int64_t skipped = 0;
  ProgressBar bar(static_cast<int64_t>(paths.size()), "extract", "img");
  for (size_t start = 0; start < paths.size(); start += kBatchSize) {
    std::vector<torch::Tensor> batch;
    std::vector<std::string> names;
    for (size_t i = start; i < std::min(paths.size(), start + kBatchSize); ++i) {
      try {
        batch.push_back(load_image(paths[i], image));  // uint8 [crop, crop, 3]
        names.push_back(paths[i].filename().string());
      } catch (const BadImageError& error) {
        if (!skip_bad) throw;
        log::warn() << "Skipped: " << error.what();
        ++skipped;
      }
    }
    if (!batch.empty()) {
      const torch::Tensor images = normalize_images(torch::stack(batch), image);  // [B, 3, crop, crop]
      const torch::Tensor grid = encoder->forward_grid(images.to(job.placement.device));  // [B, D, H', W']
      const torch::Tensor grid_cpu = grid.to(torch::kCPU, torch::kFloat);
      for (size_t b = 0; b < names.size(); ++b)
        grids.emplace_back(names[b], grid_cpu[static_cast<int64_t>(b)].clone());
    }
    bar.advance(static_cast<int64_t>(std::min(paths.size(), start + kBatchSize) - start));
  }
  bar.finish();
  save_safetensors(out, grids, describe_annotations(encoder_options, image));
  const auto size = encoder->grid_size(image.crop, image.crop);
  log::info() << "Wrote " << grids.size() << " grids [" << encoder->annotation_dim() << ", " << size[0]
              << ", " << size[1] << "] to " << out
              << (skipped ? " (" + std::to_string(skipped) + " images skipped)" : "");
  return 0;
}

int extract_splits(const Job& job, const EncoderOptions& encoder_options) {
  const Invocation& invocation = *job.invocation;
  if (!invocation.positional.empty()) {
    throw std::invalid_argument(
        "Unexpected argument '" + invocation.positional.front() +
        "' for saccade extract (files need --images)");
  }
  const Config& cfg = job.composition.config;
  DatasetOptions data = dataset_options_from(cfg);
  validate(data);
  Encoder encoder = build_encoder(encoder_options);
  encoder->eval();
  encoder->to(job.placement.device);
  torch::InferenceMode inference;
  const InferencePrecision inference_precision(job.placement);
  log_encoder_path(*encoder, data.image, job.placement.device);
  const std::filesystem::path root = invocation.has_flag("--out")
                                         ? std::filesystem::path(invocation.flag("--out"))
                                         : data.cache_dir / "features" / encoder_options.name;
  const PreparedDataset prepared = ensure_prepared(data, {Split::train, Split::val, Split::test});
  for (const Split split : {Split::train, Split::val, Split::test}) {
    const PreparedSplit& part = prepared.split(split);
    if (part.images.empty()) continue;
    auto description = describe_annotations(encoder_options, data.image);
    description["dataset.name"] = data.name;
    description["split"] = to_string(split);
    FeatureCacheWriter writer(root / to_string(split), description);
    const int64_t count = static_cast<int64_t>(part.images.size());
    ProgressBar bar(count, "extract " + to_string(split), "img");
    for (int64_t start = 0; start < count; start += kBatchSize) {
      const int64_t end = std::min(count, start + kBatchSize);
      std::vector<torch::Tensor> batch;
      std::vector<std::string> ids;
      for (int64_t row = start; row < end; ++row) {
        batch.push_back(part.source->load(row));  // uint8 [crop, crop, 3]
        ids.push_back(part.images[static_cast<size_t>(row)].image_id);
      }
      const torch::Tensor images = normalize_images(torch::stack(batch), data.image);  // [B, 3, crop, crop]
      writer.append(encoder(images.to(job.placement.device)), ids);                    // [B, L, D]
      bar.advance(end - start);
    }
    bar.finish();
    writer.finish(encoder->grid_size(data.image.crop, data.image.crop));
    log::info() << "Feature cache for " << to_string(split) << ": " << count << " images in "
                << (root / to_string(split)).string();
  }
  return 0;
}

}  // namespace

int run_extract(const Job& job) {
  const Config& cfg = job.composition.config;
  const EncoderOptions encoder_options = encoder_options_from(cfg);
  validate(encoder_options);
  if (job.invocation->has_flag("--images")) {
    ImageOptions image = image_options_from(cfg);
    validate(image);
    return extract_images(job, encoder_options, image);
  }
  return extract_splits(job, encoder_options);
}

}  // namespace saccade::cli
