// Preparing datasets end to end: options from the shipped configs, the shapes world through
// caches, vocabulary and loader, cache reuse, and the bad-input policies on a Karpathy fixture.
#include "data/prepare.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <stdexcept>

#include "data/image_cache.h"
#include "data/loader.h"
#include "data_fixtures.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

Config composed(const std::vector<std::string>& overrides) {
  ComposeRequest request;
  request.config_dir = source_dir() / "configs";
  request.overrides = overrides;
  return compose(request).config;
}

DatasetOptions tiny_shapes(const TempDir& dir) {
  DatasetOptions options;
  options.root = dir / "shapes";
  options.split_file = dir / "shapes" / kShapesSplitFile;
  options.images_dir = dir / "shapes";
  options.cache_dir = dir / "shapes" / "cache";
  options.image.resize = 64;
  options.image.crop = 64;
  options.shapes.train_images = 24;
  options.shapes.val_images = 6;
  options.shapes.test_images = 5;
  return options;
}

DatasetOptions coco_fixture(const TempDir& dir) {
  DatasetOptions options;
  options.name = "coco";
  options.kind = "karpathy";
  options.root = dir.path();
  options.split_file = write_coco_karpathy_fixture(dir.path());
  options.images_dir = dir.path();
  options.cache_dir = dir / "cache";
  options.train_splits = {"train", "restval"};
  options.image.resize = 8;
  options.image.crop = 6;
  return options;
}

TEST(DatasetOptions, ReadFromTheShippedConfigs) {
  const Config shapes = composed({});
  const DatasetOptions options = dataset_options_from(shapes);
  EXPECT_NO_THROW(validate(options));
  EXPECT_EQ(options.kind, "shapes");
  EXPECT_EQ(options.root, "datasets/shapes");
  EXPECT_EQ(options.split_file, "datasets/shapes/dataset_shapes.json");
  EXPECT_EQ(options.image.crop, 64);
  EXPECT_EQ(options.shapes.image_size, 64);
  EXPECT_TRUE(options.cache);
  EXPECT_EQ(options.on_bad_image, BadImagePolicy::fail);
  const LoaderOptions train = loader_options_from(shapes, Split::train, 16);
  EXPECT_NO_THROW(validate(train));
  EXPECT_TRUE(train.shuffle);
  EXPECT_EQ(train.batch_size, 16);
  EXPECT_FALSE(loader_options_from(shapes, Split::val, 16).shuffle);

  const DatasetOptions coco = dataset_options_from(composed({"dataset=coco", "dataset.root=/data/coco"}));
  EXPECT_NO_THROW(validate(coco));
  EXPECT_EQ(coco.kind, "karpathy");
  EXPECT_EQ(coco.split_file, "/data/coco/dataset_coco.json");
  EXPECT_EQ(coco.train_splits, (std::vector<std::string>{"train", "restval"}));
  EXPECT_EQ(coco.image.resize, 256);
  EXPECT_EQ(coco.image.crop, 224);
  const DatasetOptions coco_captions =
      dataset_options_from(composed({"dataset=coco", "dataset.root=/c", "dataset.kind=coco_captions"}));
  EXPECT_NO_THROW(validate(coco_captions));
  EXPECT_EQ(coco_captions.captions_image_dirs.back(), "/c/val2014");

  for (const char* name : {"flickr8k", "flickr30k", "coco"}) {
    try {
      dataset_options_from(composed({std::string("dataset=") + name}));
      FAIL() << name << ": no error for the missing root";
    } catch (const ConfigError& error) {
      EXPECT_NE(std::string(error.what()).find("dataset.root"), std::string::npos) << error.what();
    }
  }
  const DatasetOptions flickr = dataset_options_from(composed({"dataset=flickr30k", "dataset.root=/f"}));
  EXPECT_EQ(flickr.images_dir, "/f/flickr30k-images");
}

TEST(DatasetOptions, RegisteredKindsAreReadAndListed) {
  static int registrations = 0;  // unique per run, so --gtest_repeat works
  const std::string kind = "fixture_" + std::to_string(registrations++);
  const CorpusReader reader = [](const DatasetOptions& options) {
    return read_karpathy_split(options.split_file, options.images_dir);
  };
  dataset_registry().add(kind, reader);
  TempDir dir;
  DatasetOptions options = coco_fixture(dir);
  options.kind = kind;
  EXPECT_NO_THROW(validate(options));
  EXPECT_EQ(read_corpus(options).images.size(), 4u);
  const auto kinds = dataset_registry().names();
  EXPECT_NE(std::find(kinds.begin(), kinds.end(), kind), kinds.end());
  EXPECT_THROW(dataset_registry().add(kind, reader), std::invalid_argument);
}

TEST(DatasetOptions, EnumNamesRoundTrip) {
  for (const Split split : {Split::train, Split::val, Split::test})
    EXPECT_EQ(parse_split(to_string(split)), split);
  EXPECT_THROW(parse_split("dev"), std::invalid_argument);
  for (const auto policy : {BadImagePolicy::fail, BadImagePolicy::skip}) {
    EXPECT_EQ(parse_bad_image_policy(to_string(policy)), policy);
  }
  EXPECT_THROW(parse_bad_image_policy("ignore"), std::invalid_argument);
}

TEST(DatasetOptions, ValidateNamesKindsAndSplits) {
  DatasetOptions options;
  options.kind = "imagenet";
  try {
    validate(options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    // Other tests may register more kinds; the built-in ones are always listed.
    const std::string message = error.what();
    EXPECT_EQ(
        message.rfind(
            "dataset.kind: Unknown dataset kind 'imagenet'; known dataset kinds: coco_captions, ", 0),
        0u)
        << message;
    EXPECT_NE(message.find("karpathy, shapes"), std::string::npos) << message;
  }
  options = DatasetOptions{};
  options.val_splits.clear();
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = DatasetOptions{};
  options.kind = "coco_captions";
  EXPECT_THROW(validate(options), std::invalid_argument);
}

// A dataset regenerated or edited while a run uses it is noticed, naming the file.
TEST(EnsurePrepared, ADatasetChangedUnderARunIsNoticed) {
  TempDir dir;
  const DatasetOptions options = tiny_shapes(dir);
  const PreparedDataset data = ensure_prepared(options, {Split::val});
  ASSERT_EQ(data.sources.size(), 2u);  // the split file and the shapes truth
  EXPECT_NO_THROW(check_unchanged(data));
  const auto truth = options.root / "shapes_truth.json";
  write_file(truth, read_file(truth) + " ");
  try {
    check_unchanged(data);
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(std::string(error.what()).rfind(truth.string() + " changed while this run used it", 0), 0u)
        << error.what();
  }
}

TEST(EnsurePrepared, ShapesWorldEndToEndThroughCacheVocabularyAndLoader) {
  TempDir dir;
  const DatasetOptions options = tiny_shapes(dir);
  const PreparedDataset data = ensure_prepared(options);
  EXPECT_EQ(data.train.images.size(), 24u);
  EXPECT_EQ(data.val.images.size(), 6u);
  EXPECT_EQ(data.test.images.size(), 5u);
  EXPECT_TRUE(data.skipped().empty());
  const auto train_cache = cache_file(options, Split::train);
  EXPECT_EQ(train_cache, dir / "shapes" / "cache" / "train_r64_c64.imgcache");
  ASSERT_TRUE(std::filesystem::exists(train_cache));
  // The cache holds exactly the PNG pixels (64 -> 64 is the identity).
  EXPECT_TRUE(torch::equal(data.train.source->load(3), decode_image(data.train.images[3].path)));

  const Vocabulary vocab = build_vocabulary(data.train.images, options.vocabulary.min_word_count);
  EXPECT_TRUE(vocab.contains("circle") || vocab.contains("square"));
  const auto train = make_caption_dataset(data.train, vocab, options.vocabulary);
  const auto val = make_caption_dataset(data.val, vocab, options.vocabulary);
  EXPECT_EQ(train->size(), 24 * 5);
  EXPECT_EQ(val->size(), 6);
  EXPECT_EQ(val->get(0).references.size(), 5u);

  LoaderOptions loader_options;
  loader_options.batch_size = 16;
  loader_options.shuffle = true;
  Loader loader(train, loader_options, options.image);
  const auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->images.sizes(), (std::vector<int64_t>{16, 3, 64, 64}));
  EXPECT_EQ(batch->tokens.size(0), 16);
  EXPECT_EQ(
      batch->tokens.index({torch::indexing::Slice(), 0}).eq(Vocabulary::kStart).all().item<bool>(), true);
  for (int64_t b = 0; b < 16; ++b) {
    const int64_t length = batch->lengths[b].item<int64_t>();
    EXPECT_EQ(batch->tokens[b][length - 1].item<int64_t>(), Vocabulary::kEnd);
    EXPECT_EQ(batch->tokens[b].slice(0, length).abs().sum().item<int64_t>(), 0);  // <pad> = 0 after <end>
  }

  // A second preparation reuses the caches; other image settings get their own cache file.
  const auto before = std::filesystem::last_write_time(train_cache);
  ensure_prepared(options, {Split::train});
  EXPECT_EQ(std::filesystem::last_write_time(train_cache), before);
  DatasetOptions smaller = options;
  smaller.image.resize = 40;
  smaller.image.crop = 32;
  const PreparedDataset resized = ensure_prepared(smaller, {Split::val});
  EXPECT_TRUE(std::filesystem::exists(dir / "shapes" / "cache" / "val_r40_c32.imgcache"));
  EXPECT_EQ(resized.val.source->load(0).sizes(), (std::vector<int64_t>{32, 32, 3}));
  EXPECT_TRUE(resized.train.images.empty());  // not asked for
}

TEST(EnsurePrepared, StaleCacheIsRebuilt) {
  TempDir dir;
  const DatasetOptions options = coco_fixture(dir);
  ensure_prepared(options, {Split::val});
  // Another split file with a different image list for val makes the cache stale.
  write_file(
      options.split_file,
      R"({"images": [{"filepath": "train2014", "filename": "COCO_train2014_000000000025.jpg",
    "split": "val", "cocoid": 25, "sentences": [{"tokens": ["a", "giraffe"]}]}]})");
  const PreparedDataset data = ensure_prepared(options, {Split::val});
  ASSERT_EQ(data.val.images.size(), 1u);
  EXPECT_EQ(data.val.images[0].image_id, "25");
  EXPECT_TRUE(torch::equal(data.val.source->load(0), load_image(data.val.images[0].path, options.image)));
}

TEST(EnsurePrepared, BadImagesFailNamingTheFileOrAreSkippedAndReported) {
  for (const bool cache : {true, false}) {
    TempDir dir;
    DatasetOptions options = coco_fixture(dir);
    options.cache = cache;
    const auto broken = dir / "val2014" / "COCO_val2014_000000000042.jpg";  // restval: part of train
    write_file(broken, "");
    try {
      ensure_prepared(options);
      FAIL() << "no error";
    } catch (const BadImageError& error) {
      EXPECT_EQ(error.path(), broken);
      EXPECT_NE(std::string(error.what()).find("the file is empty (0 bytes)"), std::string::npos);
    }
    options.on_bad_image = BadImagePolicy::skip;
    const PreparedDataset data = ensure_prepared(options);
    ASSERT_EQ(data.train.images.size(), 1u);
    EXPECT_EQ(data.train.images[0].image_id, "9");
    EXPECT_EQ(data.train.source->size(), 1);
    ASSERT_EQ(data.skipped().size(), 1u);
    EXPECT_EQ(data.skipped()[0].path, broken);
    if (cache) {
      // The cache remembers what it skipped; under fail it is still an error naming the file.
      options.on_bad_image = BadImagePolicy::fail;
      EXPECT_THROW(ensure_prepared(options, {Split::train}), BadImageError);
    }
  }
}

TEST(EnsurePrepared, CorruptImageWithoutCacheIsFoundByTheLoader) {
  TempDir dir;
  DatasetOptions options = coco_fixture(dir);
  options.cache = false;
  const auto broken = dir / "train2014" / "COCO_train2014_000000000009.jpg";
  const std::string jpeg = read_file(broken);
  write_file(broken, jpeg.substr(0, jpeg.size() - 40));  // passes the cheap check, fails decoding
  const PreparedDataset data = ensure_prepared(options, {Split::train});
  ASSERT_EQ(data.train.images.size(), 2u);
  const auto train = make_caption_dataset(data.train, Vocabulary(), options.vocabulary);
  LoaderOptions loader_options;
  loader_options.on_bad_image = BadImagePolicy::skip;
  Loader loader(train, loader_options, options.image);
  const auto batch = loader.next();
  ASSERT_TRUE(batch.has_value());
  EXPECT_EQ(batch->image_ids, (std::vector<std::string>(6, "42")));  // image 9's two pairs skipped
  ASSERT_EQ(loader.skipped().size(), 1u);
  EXPECT_EQ(loader.skipped()[0].path, broken);
}

TEST(EnsurePrepared, MissingFolderMissingSplitFileAndEmptySplitsAreClearErrors) {
  TempDir dir;
  DatasetOptions options = coco_fixture(dir);
  options.images_dir = dir / "nowhere";
  try {
    ensure_prepared(options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()),
        "The images folder " + (dir / "nowhere").string() + " (dataset.images_dir) does not exist");
  }
  options = coco_fixture(dir);
  options.val_splits = {"dev"};
  EXPECT_THROW(ensure_prepared(options), std::invalid_argument);
  options = coco_fixture(dir);
  options.split_file = dir / "absent.json";
  try {
    ensure_prepared(options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what())
            .rfind(
                "The split file " + (dir / "absent.json").string() +
                    " (dataset.split_file) does not exist. HINT: ",
                0),
        0u);
  }
}

}  // namespace
}  // namespace saccade::testing
