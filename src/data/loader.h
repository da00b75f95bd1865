// Loader: batches from a Dataset, assembled by worker threads ahead of the consumer.
//
//   Loader loader(train, loader_options_from(config, Split::train, batch_size), image_options,
//                 make_augmentation(dataset_options.augment, vocab));
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     loader.start_epoch(epoch);
//     while (std::optional<Batch> batch = loader.next()) { ... batch->images, batch->tokens ... }
//   }
//
// Shapes: B batch, U the batch's image rows (B unless images are shared: group_by_image), T the
// longest token sequence in the batch, H = W = the pipeline's crop.
// The order of an epoch depends only on (seed, epoch): shuffling uses Rng(mix_seed({seed,
// epoch})), and batches come out in plan order whatever the worker timing. At most `prefetch`
// batches exist ahead of the consumer, so memory does not grow with the dataset.
#pragma once

#include <torch/types.h>

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"
#include "data/image_pipeline.h"
#include "data/image_source.h"

namespace saccade {

struct LoaderOptions {
  int64_t batch_size = 32;  // samples per batch (B); the last batch of an epoch may be smaller
  bool drop_last = false;   // leave out a last batch smaller than batch_size
  int workers = 1;          // threads assembling batches; 0 = assemble in the caller's thread
  int prefetch = 4;         // batches assembled ahead of the consumer (>= 1)
  bool shuffle = false;     // reshuffle the samples every epoch
  bool bucketing = false;   // batch samples of similar token length together (less padding)
  int bucket_pool = 50;     // with bucketing: how many batches' worth of samples are sorted together
  // Keep an image's samples (its captions) next to each other in the plan, shuffling whole
  // images; they share their augmentation draws and one row of Batch::images, so each image of a
  // batch is encoded once (an image whose captions span two batches or ranks, once in each).
  // Training then differs from encoding every caption's copy: BatchNorm's batch statistics are
  // over the distinct images, and a dropout mask is the image's. Not with bucketing.
  bool group_by_image = false;
  uint64_t seed = 0;  // the order and augmentation of epoch e depend only on (seed, e)
  // Data-parallel training: this process reads part `shard` of `shards` of every batch of the
  // plan (the same plan everywhere), so batch_size stays the global batch. 1 = the whole batch.
  int shard = 0;
  int shards = 1;
  // A sample whose image fails to decode (only possible without a cache): fail stops with an
  // error naming the file; skip drops it from its batch, logs it and counts it in skipped().
  BadImagePolicy on_bad_image = BadImagePolicy::fail;
};

// Reads data.{workers, prefetch, shuffle, bucketing, bucket_pool, group_by_image, on_bad_image}
// and `seed`. Shuffling, bucketing and grouping apply to Split::train only; val and test keep the
// dataset order.
LoaderOptions loader_options_from(const Config& config, Split split, int64_t batch_size);
// Throws std::invalid_argument: batch_size >= 1, workers >= 0, prefetch >= 1, bucket_pool >= 1,
// not both bucketing and group_by_image.
void validate(const LoaderOptions& options);

struct Batch {
  // float32 [U, 3, H, W], normalized: (x / 255 - mean) / std. U = B (and image_rows 0 .. B-1)
  // unless collated with share_images, where samples with the same image_id and equal pixels
  // after augmentation share one row.
  torch::Tensor images;
  torch::Tensor image_rows;            // int64 [B]: each sample's row of `images`
  torch::Tensor tokens;                // int64 [B, T]: <start> w1 .. wn <end>, then <pad> = 0
  torch::Tensor lengths;               // int64 [B]: tokens per row, <start> and <end> included
  std::vector<std::string> image_ids;  // [B] evaluation ids
  std::vector<std::vector<std::vector<std::string>>> references;  // [B] all references, as words
  std::vector<std::vector<std::string>> scored_references;        // [B] Sample::scored_references
  std::vector<int64_t> indices;                                   // [B] dataset indices
  int64_t size() const { return static_cast<int64_t>(indices.size()); }
};

// Stacks samples into a batch (normalizing the images with `image`'s mean and std). With
// `share_images`, samples of one image (the same image_id) whose pixels are equal after
// augmentation share a row of Batch::images. Requires at least one sample, all images of one
// size.
Batch collate(std::vector<Sample> samples, const ImageOptions& image, bool share_images = false);

// The batches of one epoch, as dataset indices: with shuffle, a permutation drawn from
// Rng(mix_seed({seed, epoch})) (with group_by_image, a permutation of the images, each followed by
// its samples in dataset order); with bucketing, consecutive pools of bucket_pool * batch_size
// samples are each sorted by length (stable) and cut into batches, and with shuffle the batches
// are then shuffled. drop_last removes a short final batch. With shards > 1 each batch of n
// samples keeps its part `shard`: samples [shard * n / shards, (shard + 1) * n / shards) (integer
// division), so the parts differ by at most one sample; a final batch with fewer samples than
// shards is left out, as some part would be empty.
std::vector<std::vector<int64_t>> plan_batches(
    const Dataset& dataset, const LoaderOptions& options, int64_t epoch);

class Loader {
 public:
  // `transform` (optional) changes each sample before collation (augmentation).
  Loader(
      std::shared_ptr<const Dataset> dataset,
      const LoaderOptions& options,
      const ImageOptions& image,
      SampleTransform transform = {});
  ~Loader();  // stops and joins the workers
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Plans epoch `epoch` and starts assembling its batches; abandons what is left of the
  // previous one. next() before any start_epoch() starts epoch 0.
  void start_epoch(int64_t epoch);
  // The next batch of the epoch in plan order, or nullopt at its end. Rethrows an error raised
  // while assembling the batch (BadImageError under on_bad_image: fail).
  std::optional<Batch> next();

  int64_t batches_per_epoch() const;
  const Dataset& dataset() const { return *dataset_; }
  // Images dropped under on_bad_image: skip since the loader was made (each file once).
  std::vector<SkippedImage> skipped() const;

 private:
  struct Slot {
    std::optional<Batch> batch;  // empty when every sample of it was skipped
    std::exception_ptr error;
  };
  // The batch of `indices`; nullopt when every sample was skipped.
  std::optional<Batch> assemble(int64_t epoch, const std::vector<int64_t>& indices);
  void work();

  std::shared_ptr<const Dataset> dataset_;
  LoaderOptions options_;
  ImageOptions image_;
  SampleTransform transform_;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  bool started_ = false;
  int64_t epoch_ = 0;
  uint64_t generation_ = 0;  // bumped by start_epoch so late results of the old epoch are dropped
  std::vector<std::vector<int64_t>> plan_;
  int64_t next_claim_ = 0;    // the next batch a worker may start
  int64_t next_deliver_ = 0;  // the next batch next() returns
  std::map<int64_t, Slot> ready_;
  std::vector<SkippedImage> skipped_;
};

}  // namespace saccade
