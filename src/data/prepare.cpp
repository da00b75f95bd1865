// Dataset options, the dataset-kind registry, and preparing splits for loading.
#include "data/prepare.h"

#include <stdexcept>

#include "data/image_cache.h"
#include "io/log.h"
#include "io/run_folder.h"

namespace saccade {
namespace {

std::vector<std::filesystem::path> to_paths(const std::vector<std::string>& items) {
  return std::vector<std::filesystem::path>(items.begin(), items.end());
}

CaptionCorpus read_shapes(const DatasetOptions& options) {
  ensure_shapes_world(options.shapes, options.root);
  return read_karpathy_split(options.split_file, options.images_dir);
}

CaptionCorpus read_karpathy(const DatasetOptions& options) {
  return read_karpathy_split(options.split_file, options.images_dir);
}

CaptionCorpus read_coco(const DatasetOptions& options) {
  return read_coco_captions(options.captions_files, options.captions_image_dirs, options.split_file);
}

// The split's images as they come, with any unusable one handled by the policy.
PreparedSplit prepare_split(const DatasetOptions& options, const CaptionCorpus& corpus, Split split) {
  PreparedSplit prepared;
  prepared.split = split;
  std::vector<ImageRecord> images = select_splits(corpus, split_labels(options, split));
  std::vector<std::filesystem::path> paths;
  paths.reserve(images.size());
  for (const auto& image : images) paths.push_back(image.path);

  if (options.cache) {
    const std::filesystem::path file = cache_file(options, split);
    std::shared_ptr<ImageCache> cache;
    if (std::filesystem::exists(file)) {
      try {
        cache = std::make_shared<ImageCache>(file);
        if (const std::string stale = cache->staleness(paths, options.image); !stale.empty()) {
          log::info() << "Image cache " << file.string() << " is stale (" << stale << "); rebuilding it";
          cache.reset();
        }
      } catch (const std::runtime_error& error) {
        log::warn() << error.what();
      }
    }
    if (cache == nullptr) {
      build_image_cache(file, paths, options.image, options.on_bad_image);
      cache = std::make_shared<ImageCache>(file);
    }
    prepared.skipped = cache->skipped();
    if (!prepared.skipped.empty() && options.on_bad_image == BadImagePolicy::fail) {
      throw BadImageError(
          prepared.skipped.front().path, prepared.skipped.front().reason + " (skipped when " + file.string() +
                                             " was built; data.on_bad_image is fail)");
    }
    prepared.source = cache;
  } else {
    for (size_t i = 0; i < paths.size(); ++i) {
      const std::string problem = check_image_file(paths[i]);
      if (problem.empty()) continue;
      if (options.on_bad_image == BadImagePolicy::fail) throw BadImageError(paths[i], problem);
      log::warn() << "Skipping image " << paths[i].string() << ": " << problem;
      prepared.skipped.push_back({paths[i], problem});
    }
  }
  // Leave out exactly the skipped images (listed in split order; paths are unique).
  std::vector<std::filesystem::path> kept_paths;
  size_t next_skipped = 0;
  for (size_t i = 0; i < images.size(); ++i) {
    if (next_skipped < prepared.skipped.size() && prepared.skipped[next_skipped].path == paths[i]) {
      ++next_skipped;
      continue;
    }
    kept_paths.push_back(paths[i]);
    prepared.images.push_back(std::move(images[i]));
  }
  if (prepared.images.empty()) {
    throw std::invalid_argument(
        "Every image of the " + to_string(split) + " split of " + corpus.source.string() +
        " was skipped as unusable");
  }
  if (!options.cache)
    prepared.source = std::make_shared<FileImageSource>(std::move(kept_paths), options.image);
  int64_t captions = 0;
  for (const auto& image : prepared.images) captions += static_cast<int64_t>(image.captions.size());
  log::info() << options.name << " " << to_string(split) << ": " << prepared.images.size() << " images, "
              << captions << " captions"
              << (prepared.skipped.empty()
                      ? ""
                      : ", " + std::to_string(prepared.skipped.size()) + " unusable images skipped");
  return prepared;
}

}  // namespace

DatasetOptions dataset_options_from(const Config& config) {
  DatasetOptions options;
  options.name = config.get<std::string>("dataset.name");
  options.kind = config.get<std::string>("dataset.kind");
  options.root = config.get<std::string>("dataset.root");
  options.split_file = config.get<std::string>("dataset.split_file");
  options.images_dir = config.get<std::string>("dataset.images_dir");
  options.cache_dir = config.get<std::string>("dataset.cache_dir");
  if (options.kind == "coco_captions") {
    options.captions_files = to_paths(config.get<std::vector<std::string>>("dataset.captions_files"));
    options.captions_image_dirs =
        to_paths(config.get<std::vector<std::string>>("dataset.captions_image_dirs"));
  }
  options.train_splits = config.get<std::vector<std::string>>("dataset.train_splits");
  options.val_splits = config.get<std::vector<std::string>>("dataset.val_splits");
  options.test_splits = config.get<std::vector<std::string>>("dataset.test_splits");
  options.image = image_options_from(config);
  options.vocabulary = vocabulary_options_from(config);
  options.augment = augment_options_from(config);
  if (options.kind == "shapes") options.shapes = shapes_world_options_from(config);
  options.cache = config.get<bool>("data.cache");
  options.on_bad_image = config.get_parsed("data.on_bad_image", parse_bad_image_policy);
  return options;
}

void validate(const DatasetOptions& options) {
  dataset_registry().check(options.kind, "dataset.kind");
  for (const auto& [key, splits] :
       {std::pair{"dataset.train_splits", &options.train_splits},
        std::pair{"dataset.val_splits", &options.val_splits},
        std::pair{"dataset.test_splits", &options.test_splits}}) {
    if (splits->empty())
      throw std::invalid_argument(std::string(key) + " must name at least one split label");
  }
  if (options.kind == "coco_captions" &&
      (options.captions_files.empty() ||
       options.captions_files.size() != options.captions_image_dirs.size())) {
    throw std::invalid_argument(
        "dataset.captions_files and dataset.captions_image_dirs must be non-empty lists of "
        "the same length for dataset.kind coco_captions");
  }
  validate(options.image);
  validate(options.vocabulary);
  validate(options.augment);
  if (options.kind == "shapes") validate(options.shapes);
}

const std::vector<std::string>& split_labels(const DatasetOptions& options, Split split) {
  switch (split) {
    case Split::train:
      return options.train_splits;
    case Split::val:
      return options.val_splits;
    case Split::test:
      return options.test_splits;
  }
  return options.test_splits;
}

Registry<CorpusReader>& dataset_registry() {
  static Registry<CorpusReader> registry(
      "dataset kind", {{"shapes", read_shapes}, {"karpathy", read_karpathy}, {"coco_captions", read_coco}});
  return registry;
}

CaptionCorpus read_corpus(const DatasetOptions& options) {
  return dataset_registry().get(options.kind, "dataset.kind")(options);
}

const PreparedSplit& PreparedDataset::split(Split which) const {
  switch (which) {
    case Split::train:
      return train;
    case Split::val:
      return val;
    case Split::test:
      return test;
  }
  return test;
}

std::vector<SkippedImage> PreparedDataset::skipped() const {
  std::vector<SkippedImage> all;
  for (const PreparedSplit* part : {&train, &val, &test})
    all.insert(all.end(), part->skipped.begin(), part->skipped.end());
  return all;
}

PreparedDataset ensure_prepared(const DatasetOptions& options, const std::vector<Split>& splits) {
  PreparedDataset prepared;
  prepared.options = options;
  if (options.kind != "shapes" && !std::filesystem::is_regular_file(options.split_file)) {
    throw std::invalid_argument(
        "The split file " + options.split_file.string() +
        " (dataset.split_file) does not exist. HINT: datasets/README.md says where "
        "each dataset and its split file come from");
  }
  const CaptionCorpus corpus = read_corpus(options);
  // Digested after reading: a change from here on is noticed by check_unchanged.
  std::vector<std::filesystem::path> sources = options.captions_files;
  if (std::filesystem::is_regular_file(options.split_file)) sources.push_back(options.split_file);
  if (options.kind == "shapes") sources.push_back(options.root / kShapesTruthFile);
  for (const auto& file : sources) {
    if (std::filesystem::is_regular_file(file)) prepared.sources.emplace_back(file, file_digest(file));
  }
  const std::filesystem::path images_dir =
      options.kind == "coco_captions" ? std::filesystem::path() : options.images_dir;
  if (!images_dir.empty() && !std::filesystem::is_directory(images_dir)) {
    throw std::invalid_argument(
        "The images folder " + images_dir.string() + " (dataset.images_dir) does not exist");
  }
  for (const auto& dir : options.captions_image_dirs) {
    if (!std::filesystem::is_directory(dir)) {
      throw std::invalid_argument(
          "The images folder " + dir.string() + " (dataset.captions_image_dirs) does not exist");
    }
  }
  for (const Split split : splits) {
    PreparedSplit& target = split == Split::train ? prepared.train
                            : split == Split::val ? prepared.val
                                                  : prepared.test;
    target = prepare_split(options, corpus, split);
  }
  const auto skipped = prepared.skipped();
  if (!skipped.empty()) {
    log::warn() << skipped.size() << " unusable images skipped (data.on_bad_image: skip)";
  }
  return prepared;
}

void check_unchanged(const PreparedDataset& data) {
  for (const auto& [file, digest] : data.sources) {
    const bool same = std::filesystem::is_regular_file(file) && file_digest(file) == digest;
    if (!same) {
      throw std::runtime_error(
          file.string() +
          " changed while this run used it (regenerated or edited by another process?): its "
          "results would mix two datasets. HINT: keep a dataset folder unchanged while runs use it");
    }
  }
}

std::filesystem::path cache_file(const DatasetOptions& options, Split split) {
  return options.cache_dir /
         (to_string(split) + "_r" + std::to_string(options.image.resize) + "_c" +
          std::to_string(options.image.crop) + (options.image.keep_aspect ? "" : "_stretch") + ".imgcache");
}

std::shared_ptr<CaptionDataset> make_caption_dataset(
    const PreparedSplit& split,
    const Vocabulary& vocabulary,
    const VocabularyOptions& options,
    std::optional<SampleMode> mode) {
  return std::make_shared<CaptionDataset>(
      split.images, split.source, vocabulary, options,
      mode.value_or(split.split == Split::train ? SampleMode::per_caption : SampleMode::per_image));
}

}  // namespace saccade
