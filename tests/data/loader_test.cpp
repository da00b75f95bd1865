// The loader: collation worked by hand, epoch plans (seeded shuffle, bucketing, drop_last),
// identical batches whatever the worker count, the bad-image policies, and CaptionDataset.
#include "data/loader.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include "data/image_source.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

// Sample i: a 2 x 2 image filled with i, tokens <start> (i % 4 + 1 words) <end>; images listed
// in `bad` throw BadImageError.
class CountingDataset : public Dataset {
 public:
  explicit CountingDataset(int64_t size, std::set<int64_t> bad = {}) : size_(size), bad_(std::move(bad)) {}
  int64_t size() const override { return size_; }
  int64_t length(int64_t index) const override { return index % 4 + 3; }
  Sample get(int64_t index) const override {
    if (bad_.count(index))
      throw BadImageError("img" + std::to_string(index) + ".jpg", "the file is empty (0 bytes)");
    Sample sample;
    sample.index = index;
    sample.image_id = "id" + std::to_string(index);
    sample.image = torch::full({2, 2, 3}, index % 256, torch::kUInt8);
    sample.tokens.push_back(Vocabulary::kStart);
    for (int64_t w = 0; w < index % 4 + 1; ++w) sample.tokens.push_back(10 + w);
    sample.tokens.push_back(Vocabulary::kEnd);
    sample.references = {{"ref", std::to_string(index)}};
    return sample;
  }

 private:
  int64_t size_;
  std::set<int64_t> bad_;
};

// Sample i is caption i % 3 of image i / 3: the image is filled with i / 3, its id is "img<i / 3>".
class ThreeCaptionsPerImage : public CountingDataset {
 public:
  using CountingDataset::CountingDataset;
  int64_t image_of(int64_t index) const override { return index / 3; }
  Sample get(int64_t index) const override {
    Sample sample = CountingDataset::get(index);
    sample.image_id = "img" + std::to_string(index / 3);
    sample.image.fill_(index / 3);
    return sample;
  }
};

LoaderOptions options_with(int64_t batch_size, int workers) {
  LoaderOptions options;
  options.batch_size = batch_size;
  options.workers = workers;
  options.prefetch = 2;
  return options;
}

std::vector<std::vector<int64_t>> drain(Loader& loader) {
  std::vector<std::vector<int64_t>> batches;
  while (auto batch = loader.next()) batches.push_back(batch->indices);
  return batches;
}

TEST(Collate, PadsTokensAndNormalizesImages) {
  const CountingDataset data(8);
  std::vector<Sample> samples = {data.get(1), data.get(3), data.get(0)};
  ImageOptions image;
  image.mean = {0.0f, 0.0f, 0.0f};
  image.std = {1.0f, 1.0f, 1.0f};
  const Batch batch = collate(samples, image);
  EXPECT_EQ(batch.size(), 3);
  ASSERT_EQ(batch.images.sizes(), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_FLOAT_EQ(batch.images[1][2][1][1].item<float>(), 3.0f / 255.0f);
  // Sample 3 has 4 words: T = 6. Rows are <start> words <end> then <pad> = 0.
  const torch::Tensor expected_tokens =
      torch::tensor({{1, 10, 11, 2, 0, 0}, {1, 10, 11, 12, 13, 2}, {1, 10, 2, 0, 0, 0}}, torch::kLong);
  EXPECT_TRUE(torch::equal(batch.tokens, expected_tokens)) << batch.tokens;
  EXPECT_TRUE(torch::equal(batch.lengths, torch::tensor({4, 6, 3}, torch::kLong)));
  EXPECT_EQ(batch.image_ids, (std::vector<std::string>{"id1", "id3", "id0"}));
  EXPECT_EQ(batch.indices, (std::vector<int64_t>{1, 3, 0}));
  EXPECT_EQ(batch.references[2], (std::vector<std::vector<std::string>>{{"ref", "0"}}));
}

TEST(Collate, SamplesOfOneImageWithEqualPixelsShareARow) {
  const ThreeCaptionsPerImage data(9);
  // Captions 0 and 1 of image 0, caption 3 of image 1, caption 2 of image 0 flipped by an
  // augmentation (other pixels), then its unflipped sibling again.
  std::vector<Sample> samples = {data.get(0), data.get(1), data.get(3), data.get(2), data.get(2)};
  samples[3].image[0][0][0] = 200;
  ImageOptions image;
  image.mean = {0.0f, 0.0f, 0.0f};
  image.std = {1.0f, 1.0f, 1.0f};
  const Batch shared = collate(samples, image, /*share_images=*/true);
  EXPECT_EQ(shared.size(), 5);
  ASSERT_EQ(shared.images.sizes(), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_TRUE(torch::equal(shared.image_rows, torch::tensor({0, 0, 1, 2, 0}, torch::kLong)))
      << shared.image_rows;
  EXPECT_FLOAT_EQ(shared.images[1][0][0][0].item<float>(), 1.0f / 255.0f);    // image 1
  EXPECT_FLOAT_EQ(shared.images[2][0][0][0].item<float>(), 200.0f / 255.0f);  // the flipped one
  EXPECT_EQ(shared.image_ids, (std::vector<std::string>{"img0", "img0", "img1", "img0", "img0"}));
  EXPECT_EQ(shared.tokens.size(0), 5);

  const Batch unshared = collate(samples, image);
  ASSERT_EQ(unshared.images.size(0), 5);
  EXPECT_TRUE(torch::equal(unshared.image_rows, torch::arange(5, torch::kLong)));
  // Every sample's image is its row of the shared batch.
  EXPECT_TRUE(torch::equal(shared.images.index_select(0, shared.image_rows), unshared.images));
}

TEST(PlanBatches, GroupByImageShufflesWholeImages) {
  const ThreeCaptionsPerImage data(30);  // 10 images
  LoaderOptions options = options_with(4, 0);
  options.shuffle = true;
  options.group_by_image = true;
  options.seed = 5;
  const auto plan = plan_batches(data, options, 0);
  std::vector<int64_t> order;
  for (const auto& batch : plan) order.insert(order.end(), batch.begin(), batch.end());
  ASSERT_EQ(order.size(), 30u);
  // Runs of one image's three captions in dataset order; the images in a shuffled order.
  std::vector<int64_t> images;
  for (size_t run = 0; run < 10; ++run) {
    const int64_t first = order[3 * run];
    EXPECT_EQ(first % 3, 0);
    EXPECT_EQ(order[3 * run + 1], first + 1);
    EXPECT_EQ(order[3 * run + 2], first + 2);
    images.push_back(first / 3);
  }
  std::vector<int64_t> sorted = images;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_NE(images, sorted);
  EXPECT_NE(plan_batches(data, options, 1), plan);
}

TEST(PlanBatches, InOrderWithoutShuffleAndDropLast) {
  const CountingDataset data(7);
  LoaderOptions options = options_with(3, 0);
  EXPECT_EQ(plan_batches(data, options, 0), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  options.drop_last = true;
  EXPECT_EQ(plan_batches(data, options, 0), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}}));
}

TEST(PlanBatches, ShardsSplitEveryBatchOfTheSharedPlan) {
  const CountingDataset data(13);
  LoaderOptions options = options_with(5, 0);  // batches {0..4} {5..9} {10, 11, 12}
  options.shards = 2;
  options.shard = 0;
  EXPECT_EQ(plan_batches(data, options, 0), (std::vector<std::vector<int64_t>>{{0, 1}, {5, 6}, {10}}));
  options.shard = 1;
  EXPECT_EQ(
      plan_batches(data, options, 0), (std::vector<std::vector<int64_t>>{{2, 3, 4}, {7, 8, 9}, {11, 12}}));
  // A last batch with fewer samples than shards is left out on every shard.
  options.shards = 4;
  options.shard = 3;
  EXPECT_EQ(plan_batches(data, options, 0), (std::vector<std::vector<int64_t>>{{3, 4}, {8, 9}}));
  options.batch_size = 6;  // {0..5} {6..11} {12}
  EXPECT_EQ(plan_batches(data, options, 0), (std::vector<std::vector<int64_t>>{{4, 5}, {10, 11}}));
  // With shuffling, the shards of one epoch are disjoint and together hold the whole plan.
  options = options_with(5, 0);
  options.shuffle = true;
  options.shards = 2;
  const auto whole = [&] {
    LoaderOptions one = options;
    one.shards = 1;
    return plan_batches(data, one, 4);
  }();
  options.shard = 0;
  const auto first = plan_batches(data, options, 4);
  options.shard = 1;
  const auto second = plan_batches(data, options, 4);
  ASSERT_EQ(first.size(), whole.size());
  for (size_t b = 0; b < whole.size(); ++b) {
    std::vector<int64_t> joined = first[b];
    joined.insert(joined.end(), second[b].begin(), second[b].end());
    EXPECT_EQ(joined, whole[b]);
  }
  options.shard = 2;
  EXPECT_THROW(validate(options), std::invalid_argument);
}

TEST(PlanBatches, ShuffleIsAPermutationThatDependsOnlyOnSeedAndEpoch) {
  const CountingDataset data(50);
  LoaderOptions options = options_with(8, 0);
  options.shuffle = true;
  options.seed = 3;
  const auto epoch0 = plan_batches(data, options, 0);
  EXPECT_EQ(plan_batches(data, options, 0), epoch0);
  EXPECT_NE(plan_batches(data, options, 1), epoch0);
  options.seed = 4;
  EXPECT_NE(plan_batches(data, options, 0), epoch0);
  std::vector<int64_t> all;
  for (const auto& batch : epoch0) all.insert(all.end(), batch.begin(), batch.end());
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i);
}

TEST(PlanBatches, BucketingSortsEachPoolByLength) {
  const CountingDataset data(40);  // lengths cycle 3, 4, 5, 6
  LoaderOptions options = options_with(5, 0);
  options.bucketing = true;
  options.bucket_pool = 4;  // pools of 20 samples, 5 of each length
  const auto batches = plan_batches(data, options, 0);
  ASSERT_EQ(batches.size(), 8u);
  for (const auto& batch : batches) {
    std::set<int64_t> lengths;
    for (const int64_t index : batch) lengths.insert(data.length(index));
    EXPECT_EQ(lengths.size(), 1u);  // every batch is one length
  }
  // Without shuffle the pools stay in place: the first batch is the shortest of the first pool.
  EXPECT_EQ(batches[0], (std::vector<int64_t>{0, 4, 8, 12, 16}));
  EXPECT_EQ(batches[4], (std::vector<int64_t>{20, 24, 28, 32, 36}));

  options.shuffle = true;
  std::vector<int64_t> all;
  for (const auto& batch : plan_batches(data, options, 2)) {
    for (size_t i = 1; i < batch.size(); ++i) EXPECT_LE(data.length(batch[i - 1]), data.length(batch[i]));
    all.insert(all.end(), batch.begin(), batch.end());
  }
  std::sort(all.begin(), all.end());
  for (int64_t i = 0; i < 40; ++i) EXPECT_EQ(all[static_cast<size_t>(i)], i);
}

TEST(Loader, SameBatchesWithAnyWorkerCountAndAcrossEpochs) {
  auto data = std::make_shared<CountingDataset>(37);
  LoaderOptions options = options_with(5, 0);
  options.shuffle = true;
  Loader inline_loader(data, options, ImageOptions{});
  inline_loader.start_epoch(1);
  const auto expected = drain(inline_loader);
  EXPECT_EQ(expected, plan_batches(*data, options, 1));
  EXPECT_EQ(inline_loader.batches_per_epoch(), 8);
  for (int workers : {1, 3}) {
    options.workers = workers;
    Loader loader(data, options, ImageOptions{});
    loader.start_epoch(0);
    loader.next();  // abandon epoch 0 part way
    loader.start_epoch(1);
    EXPECT_EQ(drain(loader), expected) << workers << " workers";
    EXPECT_FALSE(loader.next().has_value());  // stays at the end until the next epoch
    loader.start_epoch(1);
    EXPECT_EQ(drain(loader), expected);
  }
}

TEST(Loader, NextBeforeStartEpochRunsEpochZero) {
  auto data = std::make_shared<CountingDataset>(4);
  Loader loader(data, options_with(3, 2), ImageOptions{});
  EXPECT_EQ(drain(loader), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3}}));
}

TEST(Loader, BadImagesFailByDefaultAndAreCountedUnderSkip) {
  auto data = std::make_shared<CountingDataset>(6, std::set<int64_t>{2, 3});
  for (int workers : {0, 2}) {
    LoaderOptions options = options_with(2, workers);
    Loader failing(data, options, ImageOptions{});
    EXPECT_TRUE(failing.next().has_value());
    try {
      failing.next();
      FAIL() << "no error";
    } catch (const BadImageError& error) {
      EXPECT_EQ(error.path(), "img2.jpg");
    }
    options.on_bad_image = BadImagePolicy::skip;
    Loader skipping(data, options, ImageOptions{});
    // Batch {2, 3} is entirely bad and is left out; nothing else changes.
    EXPECT_EQ(drain(skipping), (std::vector<std::vector<int64_t>>{{0, 1}, {4, 5}}));
    skipping.start_epoch(1);
    drain(skipping);
    ASSERT_EQ(skipping.skipped().size(), 2u);  // each file reported once
    EXPECT_EQ(skipping.skipped()[0].path, "img2.jpg");
    EXPECT_EQ(skipping.skipped()[1].reason, "the file is empty (0 bytes)");
  }
}

TEST(Loader, TransformSeesSeededRandomness) {
  auto data = std::make_shared<CountingDataset>(6);
  SampleTransform mark = [](Sample& sample, Rng& rng) {
    sample.image_id = std::to_string(rng.next() % 1000);
  };
  auto ids = [&](int workers, int64_t epoch) {
    Loader loader(data, options_with(3, workers), ImageOptions{}, mark);
    loader.start_epoch(epoch);
    std::vector<std::string> out;
    while (auto batch = loader.next())
      out.insert(out.end(), batch->image_ids.begin(), batch->image_ids.end());
    return out;
  };
  EXPECT_EQ(ids(0, 0), ids(2, 0));
  EXPECT_NE(ids(0, 0), ids(0, 1));
}

TEST(Loader, GroupedByImageCaptionsShareTheirImagesDrawsAndRow) {
  // An augmentation that writes a random draw into the first pixel: drawn per caption, an image's
  // captions would differ and need a row each; grouped, they draw alike and share one.
  SampleTransform mark = [](Sample& sample, Rng& rng) {
    sample.image[0][0][0] = static_cast<int64_t>(rng.next() % 256);
  };
  LoaderOptions options = options_with(7, 2);
  options.shuffle = true;
  options.group_by_image = true;
  Loader loader(std::make_shared<ThreeCaptionsPerImage>(30), options, ImageOptions{}, mark);
  loader.start_epoch(0);
  int64_t batches = 0;
  while (auto batch = loader.next()) {
    std::map<int64_t, int64_t> row_of_image;
    for (int64_t b = 0; b < batch->size(); ++b) {
      const int64_t row = batch->image_rows[b].item<int64_t>();
      const auto [known, added] = row_of_image.emplace(batch->indices[static_cast<size_t>(b)] / 3, row);
      EXPECT_EQ(known->second, row) << "image " << known->first << " in two rows";
    }
    EXPECT_EQ(batch->images.size(0), static_cast<int64_t>(row_of_image.size()));
    ++batches;
  }
  EXPECT_EQ(batches, 5);  // 30 captions in batches of 7
}

TEST(Loader, ValidateNamesTheKey) {
  LoaderOptions options;
  EXPECT_NO_THROW(validate(options));
  options.prefetch = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = LoaderOptions{};
  options.workers = -1;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = LoaderOptions{};
  options.batch_size = 0;
  EXPECT_THROW(Loader(std::make_shared<CountingDataset>(1), options, ImageOptions{}), std::invalid_argument);
  options = LoaderOptions{};
  options.bucketing = options.group_by_image = true;
  try {
    validate(options);
    ADD_FAILURE() << "bucketing with group_by_image was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("data.group_by_image"), std::string::npos) << error.what();
  }
}

// An in-memory image source: row r is filled with r.
class FilledSource : public ImageSource {
 public:
  explicit FilledSource(int64_t rows) : rows_(rows) {}
  int64_t size() const override { return rows_; }
  torch::Tensor load(int64_t row) const override { return torch::full({2, 2, 3}, row, torch::kUInt8); }

 private:
  int64_t rows_;
};

ImageRecord record(const std::string& id, const std::vector<std::vector<std::string>>& captions) {
  ImageRecord image;
  image.image_id = id;
  for (const auto& words : captions) image.captions.push_back({"", words});
  return image;
}

TEST(CaptionDataset, PerCaptionPairsAndPerImageReferences) {
  const std::vector<ImageRecord> images = {
      record("a", {{"red", "circle"}, {"a", "red", "circle", "on", "gray"}}),
      record("b", {{"blue", "square"}}),
  };
  const Vocabulary vocab(std::vector<std::string>{"red", "circle", "blue"});
  VocabularyOptions options;
  options.max_caption_length = 3;

  const CaptionDataset train(
      images, std::make_shared<FilledSource>(2), vocab, options, SampleMode::per_caption);
  ASSERT_EQ(train.size(), 3);
  EXPECT_EQ(train.truncated_captions(), 1);
  const Sample second = train.get(1);
  EXPECT_EQ(second.image_id, "a");
  EXPECT_EQ(
      second.tokens, (std::vector<int64_t>{1, 3, 4, 5, 2}));  // "<unk> red circle", truncated to 3 words
  EXPECT_EQ(second.references[1].size(), 5u);                 // references are never truncated
  EXPECT_EQ(train.length(1), 5);
  EXPECT_EQ(train.get(2).image[0][0][0].item<int>(), 1);  // image b is row 1
  EXPECT_EQ(train.image_of(2), 1);
  EXPECT_THROW(train.get(3), std::invalid_argument);

  options.on_long_caption = LongCaptionPolicy::drop;
  const CaptionDataset dropped(
      images, std::make_shared<FilledSource>(2), vocab, options, SampleMode::per_caption);
  EXPECT_EQ(dropped.size(), 2);
  EXPECT_EQ(dropped.dropped_captions(), 1);

  options.max_caption_length = 1;
  const CaptionDataset val(images, std::make_shared<FilledSource>(2), vocab, options, SampleMode::per_image);
  ASSERT_EQ(val.size(), 2);  // one per image, even with drop: the first reference is truncated instead
  EXPECT_EQ(val.get(0).tokens, (std::vector<int64_t>{1, 4, 2}));
  EXPECT_EQ(val.get(0).references.size(), 2u);

  EXPECT_THROW(
      CaptionDataset(images, std::make_shared<FilledSource>(3), vocab, options, SampleMode::per_image),
      std::invalid_argument);
}

TEST(SubsetDataset, ReindexesAndChecksRange) {
  auto base = std::make_shared<CountingDataset>(10);
  const SubsetDataset subset(base, {7, 2});
  ASSERT_EQ(subset.size(), 2);
  EXPECT_EQ(subset.get(0).image_id, "id7");
  EXPECT_EQ(subset.get(0).index, 0);
  EXPECT_EQ(subset.length(1), base->length(2));
  EXPECT_THROW(SubsetDataset(base, {10}), std::invalid_argument);
  EXPECT_EQ(first_indices(3, 10), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(first_indices(30, 2), (std::vector<int64_t>{0, 1}));
}

}  // namespace
}  // namespace saccade::testing
