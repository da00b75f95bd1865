// Datasets by name: the `dataset.*` options, the registry of dataset kinds, and making sure a
// dataset is ready to train on (shapes world generated, captions read, image caches written).
//
//   DatasetOptions options = dataset_options_from(config);
//   validate(options);
//   PreparedDataset data = ensure_prepared(options);     // idempotent; generates/caches as needed
//   Vocabulary vocab = build_vocabulary(data.train.images, options.vocabulary.min_word_count);
//   std::shared_ptr<CaptionDataset> train = make_caption_dataset(data.train, vocab, options.vocabulary);
//   std::shared_ptr<CaptionDataset> val = make_caption_dataset(data.val, vocab, options.vocabulary);
//
// Dataset kinds (`dataset.kind`): `shapes` (generated into dataset.root on first use, then read
// like a Karpathy file), `karpathy` (a Karpathy split file: Flickr8k, Flickr30k, COCO) and
// `coco_captions` (COCO's captions_*.json plus a split list). Splits: train = the images labelled
// with one of dataset.train_splits (e.g. [train, restval]), val = dataset.val_splits, test =
// dataset.test_splits. With data.cache each split's preprocessed images live in one
// memory-mapped file under dataset.cache_dir, rebuilt when missing or made from other images or
// image settings; without it images are decoded on every load.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/registry.h"
#include "config/config.h"
#include "data/augment.h"
#include "data/caption_corpus.h"
#include "data/dataset.h"
#include "data/image_pipeline.h"
#include "data/image_source.h"
#include "data/shapes_world.h"
#include "data/vocabulary.h"

namespace saccade {

struct DatasetOptions {
  std::string name = "shapes";  // display name, used in logs and results
  std::string kind = "shapes";  // how it is read: shapes | karpathy | coco_captions
  // The dataset's folder; relative paths are relative to the working directory.
  std::filesystem::path root = "datasets/shapes";
  // The Karpathy split file (kinds karpathy and shapes), or the split list (kind coco_captions).
  std::filesystem::path split_file = "datasets/shapes/dataset_shapes.json";
  // Image paths in the split file are relative to this folder.
  std::filesystem::path images_dir = "datasets/shapes";
  // Where the image caches go (one file per split and image setting).
  std::filesystem::path cache_dir = "datasets/shapes/cache";
  // Kind coco_captions: COCO captions files, and for each the folder of its images.
  std::vector<std::filesystem::path> captions_files;
  std::vector<std::filesystem::path> captions_image_dirs;
  // The split labels that make up each split (train: [train, restval] for COCO).
  std::vector<std::string> train_splits = {"train"};
  std::vector<std::string> val_splits = {"val"};
  std::vector<std::string> test_splits = {"test"};
  ImageOptions image;            // dataset.image.*
  VocabularyOptions vocabulary;  // dataset.min_word_count, max_caption_length, on_long_caption
  AugmentOptions augment;        // dataset.augment.*
  ShapesWorldOptions shapes;     // dataset.shapes.*, kind shapes only
  // data.cache: decode each split once into a memory-mapped cache; false = decode on every load.
  bool cache = true;
  BadImagePolicy on_bad_image = BadImagePolicy::fail;  // data.on_bad_image
};

// Reads every dataset.* key (dataset.shapes.* only for kind shapes, dataset.captions_* only for
// kind coco_captions) plus data.cache and data.on_bad_image.
DatasetOptions dataset_options_from(const Config& config);
// Validates every part; throws std::invalid_argument naming the key (an unknown kind lists the
// known ones).
void validate(const DatasetOptions& options);

// The split labels that make up `split` (options.train_splits, ...).
const std::vector<std::string>& split_labels(const DatasetOptions& options, Split split);

// Reads a dataset kind's captions and splits.
using CorpusReader = CaptionCorpus (*)(const DatasetOptions& options);
// The dataset kinds by name: shapes, karpathy, coco_captions, and any added.
Registry<CorpusReader>& dataset_registry();
// Reads the corpus of options.kind (for shapes: generates the world first if needed).
CaptionCorpus read_corpus(const DatasetOptions& options);

// One split ready to load: its usable images and where their pixels come from.
struct PreparedSplit {
  Split split = Split::train;
  std::vector<ImageRecord> images;            // in corpus order, bad images left out (skip)
  std::shared_ptr<const ImageSource> source;  // row i holds images[i]
  std::vector<SkippedImage> skipped;          // left out under on_bad_image: skip
};

struct PreparedDataset {
  DatasetOptions options;
  PreparedSplit train;
  PreparedSplit val;
  PreparedSplit test;
  const PreparedSplit& split(Split which) const;
  // Every skipped image of every prepared split, for the run summary.
  std::vector<SkippedImage> skipped() const;
  // The files the captions (and the shapes world's truth) were read from, with their digests
  // when they were read.
  std::vector<std::pair<std::filesystem::path, std::string>> sources;
};

// Throws std::runtime_error naming the first of data.sources whose content changed since it was
// read (a dataset regenerated or edited by another process while a run used it).
void check_unchanged(const PreparedDataset& data);

// Reads the corpus and prepares `splits` (the others stay empty): checks the images folder,
// applies on_bad_image (with a cache: while building it; without: cheap file checks now,
// decoding errors later in the loader), builds missing or outdated caches. Logs a summary per
// split and every skipped file. Throws std::invalid_argument for a missing images folder, an
// empty split or bad JSON; BadImageError (under fail) naming the first bad image.
PreparedDataset ensure_prepared(
    const DatasetOptions& options,
    const std::vector<Split>& splits = {Split::train, Split::val, Split::test});

// The cache file of a split: <cache_dir>/<split>_r<resize>_c<crop>[_stretch].imgcache.
std::filesystem::path cache_file(const DatasetOptions& options, Split split);

// The dataset of a prepared split: per (image, caption) pair for train, per image otherwise, or
// as `mode` says.
std::shared_ptr<CaptionDataset> make_caption_dataset(
    const PreparedSplit& split,
    const Vocabulary& vocabulary,
    const VocabularyOptions& options,
    std::optional<SampleMode> mode = std::nullopt);

}  // namespace saccade
