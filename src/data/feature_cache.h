// FeatureCache: a split's encoder annotations, computed once by `saccade extract` so decoder
// training need not rerun the CNN every epoch.
//
//   FeatureCacheWriter writer("datasets/coco/cache/features/resnet101/train", description);
//   writer.append(encoder(images).to(torch::kHalf), batch.image_ids);   // [B, L, D]
//   writer.finish();
//
//   FeatureCache cache("datasets/coco/cache/features/resnet101/train");
//   torch::Tensor a = cache.batch({4, 17, 9});                           // float32 [3, L, D]
//
// Folder layout:
//   features.json          {"version": 1, "images": N, "dim": D, "grid": [H', W'], "shard_size": S,
//                           "description": {"encoder.name": "resnet101", ...},
//                           "shards": ["shard-00000.safetensors", ...], "image_ids": [...]}
//   shard-<k>.safetensors  "annotations": F16 [n_k, L, D], rows k*S .. k*S + n_k - 1, plus the
//                          description as __metadata__
// Annotations are stored row-major as the encoder's forward returns them (l = y * W' + x).
// features.json is written last (atomically), so an interrupted extraction is never read. The
// reader memory-maps the shards: memory does not grow with the dataset.
#pragma once

#include <torch/types.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/caption_corpus.h"
#include "data/dataset.h"
#include "io/safetensors.h"

namespace saccade {

// Free-form facts that decide whether a cache is current ("encoder.name" -> "resnet101",
// "dataset.image.crop" -> "224", ...), compared by the consumer.
using FeatureCacheDescription = std::map<std::string, std::string>;

class FeatureCacheWriter {
 public:
  // Starts a cache for `dir`, written beside it (temporary_for(dir)) and put in its place by
  // finish(): a cache already in `dir` stays whole until then, and whole if the writer goes away
  // unfinished (an error, a kill), which removes what it wrote. shard_bytes: the approximate size
  // of one shard file.
  FeatureCacheWriter(
      std::filesystem::path dir,
      FeatureCacheDescription description,
      int64_t shard_bytes = int64_t{256} << 20);
  ~FeatureCacheWriter();
  FeatureCacheWriter(const FeatureCacheWriter&) = delete;
  FeatureCacheWriter& operator=(const FeatureCacheWriter&) = delete;

  // Adds a batch of annotations [B, L, D] (stored as f16) with the batch's image ids.
  // Throws std::invalid_argument when L or D differ from the first batch.
  void append(const torch::Tensor& annotations, const std::vector<std::string>& image_ids);

  // Writes the last shard and features.json and puts the cache in `dir`, replacing what was
  // there. `grid` is [H', W'] with H' * W' = L.
  void finish(const std::array<int64_t, 2>& grid);

  int64_t size() const { return static_cast<int64_t>(image_ids_.size()); }

 private:
  void flush_shard();

  std::filesystem::path dir_;
  std::filesystem::path staged_;  // where the cache is written until finish()
  bool finished_ = false;
  FeatureCacheDescription description_;
  int64_t shard_bytes_;
  int64_t shard_size_ = 0;              // rows per shard, fixed by the first batch
  int64_t locations_ = 0;               // L
  int64_t dim_ = 0;                     // D
  std::vector<torch::Tensor> pending_;  // rows not yet in a shard, f16 [n, L, D] pieces
  int64_t pending_rows_ = 0;
  std::vector<std::string> shards_;
  std::vector<std::string> image_ids_;
};

class FeatureCache {
 public:
  // Reads features.json and maps every shard. Throws std::runtime_error naming the file when
  // the folder holds no finished cache or a shard disagrees with the manifest.
  explicit FeatureCache(const std::filesystem::path& dir);

  int64_t size() const { return static_cast<int64_t>(image_ids_.size()); }  // N
  int64_t dim() const { return dim_; }                                      // D
  std::array<int64_t, 2> grid_size() const { return grid_; }                // [H', W']
  const std::vector<std::string>& image_ids() const { return image_ids_; }
  const FeatureCacheDescription& description() const { return description_; }

  // Row `index` as f16 [L, D], a view into the mapping. Throws std::out_of_range.
  torch::Tensor get(int64_t index) const;
  // Rows `indices` as float32 [B, L, D]. A row holding a NaN or an infinity is a
  // std::runtime_error naming the shard and the image.
  torch::Tensor batch(const std::vector<int64_t>& indices) const;

 private:
  std::filesystem::path dir_;
  int64_t dim_ = 0;
  std::array<int64_t, 2> grid_{0, 0};
  int64_t shard_size_ = 0;
  std::vector<std::string> image_ids_;
  FeatureCacheDescription description_;
  std::vector<torch::Tensor> shards_;  // f16 [n_k, L, D] views, one per shard
};

// The cache of one split under a `saccade extract` folder (<root>/<split>/), checked to hold
// exactly `images` in order and to have been extracted as `expected` describes (every key equal:
// the encoder, a digest of its weights, the image settings). Throws std::invalid_argument naming
// the folder and the first difference, with a hint.
std::unique_ptr<FeatureCache> open_split_features(
    const std::filesystem::path& root,
    Split split,
    const std::vector<ImageRecord>& images,
    const FeatureCacheDescription& expected);

}  // namespace saccade
