// Feature cache shards (f16 safetensors) and their manifest (features.json).
#include "data/feature_cache.h"

#include <stdexcept>

#include "io/json.h"
#include "io/temporaries.h"

namespace saccade {
namespace {

constexpr const char* kManifest = "features.json";

std::string shard_name(size_t index) {
  std::string digits = std::to_string(index);
  if (digits.size() < 5) digits.insert(0, 5 - digits.size(), '0');
  return "shard-" + digits + ".safetensors";
}

}  // namespace

FeatureCacheWriter::FeatureCacheWriter(
    std::filesystem::path dir, FeatureCacheDescription description, int64_t shard_bytes)
    : dir_(std::move(dir)),
      staged_(temporary_for(dir_)),
      description_(std::move(description)),
      shard_bytes_(shard_bytes) {
  if (shard_bytes_ <= 0) throw std::invalid_argument("The feature cache shard size must be > 0 bytes");
  remove_stale_temporaries(dir_);
  remove_tree(staged_);
  std::error_code error;
  std::filesystem::create_directories(staged_, error);
  if (error) {
    throw std::runtime_error(
        "Could not create feature cache folder '" + staged_.string() + "': " + error.message());
  }
}

FeatureCacheWriter::~FeatureCacheWriter() {
  std::error_code ignored;
  if (!finished_) remove_tree(staged_, ignored);
}

void FeatureCacheWriter::append(const torch::Tensor& annotations, const std::vector<std::string>& image_ids) {
  if (annotations.dim() != 3 || annotations.size(0) != static_cast<int64_t>(image_ids.size())) {
    throw std::invalid_argument(
        "Feature cache rows must be [B, L, D] with one image id per row, got " +
        std::to_string(annotations.dim()) + " dims and " + std::to_string(image_ids.size()) + " ids");
  }
  if (locations_ == 0) {
    locations_ = annotations.size(1);
    dim_ = annotations.size(2);
    shard_size_ = std::max<int64_t>(1, shard_bytes_ / std::max<int64_t>(1, locations_ * dim_ * 2));
  } else if (annotations.size(1) != locations_ || annotations.size(2) != dim_) {
    throw std::invalid_argument(
        "Feature cache rows changed shape from [" + std::to_string(locations_) + ", " + std::to_string(dim_) +
        "] to [" + std::to_string(annotations.size(1)) + ", " + std::to_string(annotations.size(2)) + "]");
  }
  const torch::Tensor rows = annotations.detach().to(torch::kCPU, torch::kHalf).contiguous();  // [B, L, D]
  image_ids_.insert(image_ids_.end(), image_ids.begin(), image_ids.end());
  int64_t start = 0;
  while (start < rows.size(0)) {
    const int64_t take = std::min(rows.size(0) - start, shard_size_ - pending_rows_);
    pending_.push_back(rows.narrow(0, start, take));  // [take, L, D]
    pending_rows_ += take;
    start += take;
    if (pending_rows_ == shard_size_) flush_shard();
  }
}

void FeatureCacheWriter::flush_shard() {
  if (pending_rows_ == 0) return;
  const std::string name = shard_name(shards_.size());
  save_safetensors(staged_ / name, {{"annotations", torch::cat(pending_, 0)}}, description_);  // [n, L, D]
  shards_.push_back(name);
  pending_.clear();
  pending_rows_ = 0;
}

void FeatureCacheWriter::finish(const std::array<int64_t, 2>& grid) {
  if (!image_ids_.empty() && grid[0] * grid[1] != locations_) {
    throw std::invalid_argument(
        "Feature cache grid " + std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + " does not hold " +
        std::to_string(locations_) + " locations");
  }
  flush_shard();
  Json description = Json::object();
  for (const auto& [key, value] : description_) description.set(key, value);
  Json shards = Json::array();
  for (const auto& shard : shards_) shards.push_back(shard);
  Json ids = Json::array();
  for (const auto& id : image_ids_) ids.push_back(id);
  const Json manifest = Json::object({
      {"version", 1},
      {"images", static_cast<int64_t>(image_ids_.size())},
      {"dim", dim_},
      {"grid", Json::array({grid[0], grid[1]})},
      {"shard_size", shard_size_},
      {"description", std::move(description)},
      {"shards", std::move(shards)},
      {"image_ids", std::move(ids)},
  });
  write_json_file(staged_ / kManifest, manifest);
  if (dir_.has_parent_path()) std::filesystem::create_directories(dir_.parent_path());
  swap_into_place(staged_, dir_);
  finished_ = true;
}

FeatureCache::FeatureCache(const std::filesystem::path& dir) : dir_(dir) {
  const auto manifest_path = dir / kManifest;
  if (!std::filesystem::exists(manifest_path)) {
    throw std::runtime_error(
        "No finished feature cache in '" + dir.string() + "' (no " + kManifest +
        "). HINT: run `saccade extract`");
  }
  try {
    const Json manifest = read_json_file(manifest_path);
    dim_ = manifest.at("dim").as_int64();
    grid_ = {manifest.at("grid").at(0).as_int64(), manifest.at("grid").at(1).as_int64()};
    shard_size_ = manifest.at("shard_size").as_int64();
    for (const auto& [key, value] : manifest.at("description").as_object())
      description_[key] = value.as_string();
    for (const auto& id : manifest.at("image_ids").as_array()) image_ids_.push_back(id.as_string());
    for (const auto& shard : manifest.at("shards").as_array()) {
      // A shard lies in the cache's own folder: a name reaching elsewhere is no shard of it.
      const std::string& name = shard.as_string();
      if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
        throw std::invalid_argument("the shard name '" + name + "' is not a file name in the cache's folder");
      const SafetensorsReader reader(dir / name);
      shards_.push_back(reader.get("annotations"));  // f16 [n_k, L, D]; the view keeps the mapping
    }
  } catch (const std::invalid_argument& error) {
    throw std::runtime_error(
        "Invalid feature cache manifest '" + manifest_path.string() + "': " + error.what());
  }
  int64_t rows = 0;
  for (size_t k = 0; k < shards_.size(); ++k) {
    const torch::Tensor& shard = shards_[k];
    const bool full = k + 1 < shards_.size();
    if (shard.dim() != 3 || shard.size(1) != grid_[0] * grid_[1] || shard.size(2) != dim_ ||
        (full && shard.size(0) != shard_size_) || shard.size(0) > shard_size_) {
      throw std::runtime_error(
          "Feature cache shard '" + (dir / shard_name(k)).string() + "' disagrees with " +
          manifest_path.string());
    }
    rows += shard.size(0);
  }
  if (rows != size()) {
    throw std::runtime_error(
        "Feature cache '" + dir.string() + "' holds " + std::to_string(rows) + " rows but lists " +
        std::to_string(size()) + " images");
  }
}

torch::Tensor FeatureCache::get(int64_t index) const {
  if (index < 0 || index >= size()) {
    throw std::out_of_range(
        "Feature cache row " + std::to_string(index) + " is out of range 0.." + std::to_string(size() - 1));
  }
  return shards_[index / shard_size_][index % shard_size_];  // [L, D]
}

torch::Tensor FeatureCache::batch(const std::vector<int64_t>& indices) const {
  torch::Tensor out =
      torch::empty({static_cast<int64_t>(indices.size()), grid_[0] * grid_[1], dim_});  // [B, L, D]
  for (size_t i = 0; i < indices.size(); ++i) out[static_cast<int64_t>(i)].copy_(get(indices[i]));
  // A NaN or infinity from a damaged shard would train and score without a word (empty captions).
  if (!torch::isfinite(out).all().item<bool>()) {
    for (size_t i = 0; i < indices.size(); ++i) {
      if (torch::isfinite(out[static_cast<int64_t>(i)]).all().item<bool>()) continue;
      throw std::runtime_error(
          "Feature cache shard '" +
          (dir_ / shard_name(static_cast<size_t>(indices[i] / shard_size_))).string() +
          "' holds a NaN or infinite value in the row of image " +
          image_ids_[static_cast<size_t>(indices[i])] + "; extract the features again");
    }
  }
  return out;
}

std::unique_ptr<FeatureCache> open_split_features(
    const std::filesystem::path& root,
    Split split,
    const std::vector<ImageRecord>& images,
    const FeatureCacheDescription& expected) {
  const auto dir = root / to_string(split);
  auto cache = std::make_unique<FeatureCache>(dir);
  const auto& ids = cache->image_ids();
  bool same_images = ids.size() == images.size();
  for (size_t i = 0; same_images && i < ids.size(); ++i) same_images = ids[i] == images[i].image_id;
  if (!same_images) {
    throw std::invalid_argument(
        "Feature cache " + dir.string() + " holds other images than the " + to_string(split) +
        " split. HINT: rerun saccade extract with this dataset config");
  }
  for (const auto& [key, value] : expected) {
    const auto found = cache->description().find(key);
    if (found == cache->description().end() || found->second != value) {
      throw std::invalid_argument(
          "Feature cache " + dir.string() + " was extracted with " + key + "=" +
          (found == cache->description().end() ? "(not recorded: an older saccade)" : found->second) +
          ", this run has " + value +
          ". HINT: rerun saccade extract with this run's encoder and image settings");
    }
  }
  return cache;
}

}  // namespace saccade
