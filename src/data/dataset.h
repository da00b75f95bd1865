// Datasets: the `size()/get(i)` interface the loader reads, the captioning dataset, decorators.
//
//   auto train = std::make_shared<CaptionDataset>(split.images, split.source, vocab, vocab_options,
//                                                 SampleMode::per_caption);
//   Sample s = train->get(0);   // one (image, caption) pair: s.image uint8 [H, W, 3], s.tokens
//   auto first100 = std::make_shared<SubsetDataset>(train, first_indices(100, train->size()));
//
// Training iterates one sample per (image, caption) pair, as the paper and sgrvinod's tutorial
// do; validation and test iterate one sample per image carrying all its references. Batching,
// shuffling, bucketing, grouping by image and prefetching are the Loader's (loader.h): they need
// the order and the batches decided together.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "data/caption_corpus.h"
#include "data/image_source.h"
#include "data/rng.h"
#include "data/vocabulary.h"

namespace saccade {

// The three uses of a dataset: training, validation (model selection), test (reporting).
enum class Split { train, val, test };
std::string to_string(Split split);
// "train" | "val" | "test"; throws std::invalid_argument naming the value otherwise.
Split parse_split(const std::string& name);

struct Sample {
  int64_t index = 0;     // position in the dataset that produced it (the one the loader reads)
  std::string image_id;  // evaluation id (ImageRecord::image_id)
  torch::Tensor image;   // uint8 [H, W, 3], RGB, not normalized
  // <start> w1 .. wn <end>: the pair's caption (per_caption), or the image's first reference
  // (per_image, so a validation loss can be computed).
  std::vector<int64_t> tokens;
  // Every reference caption of the image, as words: never truncated, rare words not replaced
  // by <unk> (scores must be computed against the true references).
  std::vector<std::vector<std::string>> references;
  // What a caption of the image is scored against (scored_references in caption_corpus.h): the
  // references' raw text, for coco-caption's tokenizer.
  std::vector<std::string> scored_references;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual int64_t size() const = 0;
  // Sample `index` (0 <= index < size()). Safe to call from several threads at once. Throws
  // BadImageError when its image cannot be used (only when reading image files directly).
  virtual Sample get(int64_t index) const = 0;
  // Number of tokens of sample `index` (the length of Sample::tokens) without loading its
  // image; the loader buckets by it.
  virtual int64_t length(int64_t index) const = 0;
  // The image sample `index` shows, as an index into the dataset's images: samples with the same
  // value show the same image (the loader groups them under data.group_by_image). By default
  // every sample is its own image.
  virtual int64_t image_of(int64_t index) const { return index; }
};

// A random change applied to a training sample by the loader; `rng` is seeded from the loader
// seed, the epoch and the sample index, so results do not depend on thread timing.
using SampleTransform = std::function<void(Sample& sample, Rng& rng)>;

// Whether a dataset has one sample per (image, caption) pair or one per image.
enum class SampleMode { per_caption, per_image };

class CaptionDataset : public Dataset {
 public:
  // `images[i]` is row i of `source`. Captions are encoded with `vocabulary`; in per_caption mode
  // options.max_caption_length / on_long_caption shorten or drop pairs (the counts are logged
  // once here); in per_image mode only Sample::tokens (the first reference) is shortened.
  CaptionDataset(
      std::vector<ImageRecord> images,
      std::shared_ptr<const ImageSource> source,
      const Vocabulary& vocabulary,
      const VocabularyOptions& options,
      SampleMode mode);

  int64_t size() const override { return static_cast<int64_t>(offsets_.size()) - 1; }
  Sample get(int64_t index) const override;
  int64_t length(int64_t index) const override { return offsets_[index + 1] - offsets_[index]; }

  const std::vector<ImageRecord>& images() const { return images_; }
  SampleMode mode() const { return mode_; }
  int64_t image_of(int64_t index) const override { return item_images_[index]; }  // index into images()
  int64_t truncated_captions() const { return truncated_; }  // captions shortened to max_caption_length
  int64_t dropped_captions() const { return dropped_; }      // pairs left out (on_long_caption: drop)

 private:
  std::vector<ImageRecord> images_;
  std::shared_ptr<const ImageSource> source_;
  SampleMode mode_;
  std::vector<int32_t> item_images_;  // per sample: its image
  std::vector<int32_t> tokens_;       // every sample's token ids, back to back
  std::vector<int64_t> offsets_;      // sample i's tokens are tokens_[offsets_[i], offsets_[i + 1])
  int64_t truncated_ = 0;
  int64_t dropped_ = 0;
};

// A view of some samples of another dataset, in the given order (e.g. the first n images to
// visualize). Throws std::invalid_argument for an index out of the base's range.
class SubsetDataset : public Dataset {
 public:
  SubsetDataset(std::shared_ptr<const Dataset> base, std::vector<int64_t> indices);
  int64_t size() const override { return static_cast<int64_t>(indices_.size()); }
  Sample get(int64_t index) const override;  // Sample::index is the index within the subset
  int64_t length(int64_t index) const override { return base_->length(indices_[index]); }
  int64_t image_of(int64_t index) const override { return base_->image_of(indices_[index]); }

 private:
  std::shared_ptr<const Dataset> base_;
  std::vector<int64_t> indices_;
};

// 0, 1, ..., min(n, size) - 1: the indices of the first n samples.
std::vector<int64_t> first_indices(int64_t n, int64_t size);

}  // namespace saccade
