// Feature cache: shards split and rejoin in order, values are the f16 rounding of what was
// written, an unfinished or inconsistent cache is a clear error.
#include "data/feature_cache.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "test_util.h"

namespace saccade {
namespace {

using saccade::testing::TempDir;
using ::testing::HasSubstr;

class FeatureCacheTest : public ::testing::Test {
 protected:
  FeatureCacheTest() { torch::manual_seed(0); }
  TempDir dir_;
};

TEST_F(FeatureCacheTest, RowsSurviveShardingInOrder) {
  const torch::Tensor all = torch::randn({11, 6, 4});  // N = 11 images, L = 6 (2x3), D = 4
  std::vector<std::string> ids;
  for (int i = 0; i < 11; ++i) ids.push_back("img" + std::to_string(i));
  // 3 rows per shard (3 * 6 * 4 * 2 bytes = 144), appended in uneven batches.
  FeatureCacheWriter writer(dir_.path(), {{"encoder.name", "small_cnn"}}, 144);
  writer.append(all.narrow(0, 0, 2), {ids.begin(), ids.begin() + 2});
  writer.append(all.narrow(0, 2, 7), {ids.begin() + 2, ids.begin() + 9});
  writer.append(all.narrow(0, 9, 2), {ids.begin() + 9, ids.end()});
  writer.finish({2, 3});
  EXPECT_TRUE(std::filesystem::exists(dir_ / "shard-00003.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "shard-00004.safetensors"));

  const FeatureCache cache(dir_.path());
  EXPECT_EQ(cache.size(), 11);
  EXPECT_EQ(cache.dim(), 4);
  EXPECT_EQ(cache.grid_size(), (std::array<int64_t, 2>{2, 3}));
  EXPECT_EQ(cache.image_ids(), ids);
  EXPECT_EQ(cache.description().at("encoder.name"), "small_cnn");
  const torch::Tensor expected = all.to(torch::kHalf);
  for (int64_t i = 0; i < 11; ++i) {
    EXPECT_EQ(cache.get(i).scalar_type(), torch::kHalf);
    EXPECT_TRUE(torch::equal(cache.get(i), expected[i])) << i;
  }
  const torch::Tensor batch = cache.batch({10, 0, 4});
  EXPECT_EQ(batch.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(batch[0], expected[10].to(torch::kFloat)));
  EXPECT_TRUE(torch::equal(batch[2], expected[4].to(torch::kFloat)));
  EXPECT_THROW(cache.get(11), std::out_of_range);
}

TEST_F(FeatureCacheTest, UnfinishedOrBrokenCachesAreErrors) {
  {
    FeatureCacheWriter writer(dir_.path(), {}, 1);
    writer.append(torch::randn({2, 4, 3}), {"a", "b"});  // no finish(): no manifest
    EXPECT_THROW(writer.append(torch::randn({1, 5, 3}), {"c"}), std::invalid_argument);
    EXPECT_THROW(writer.append(torch::randn({2, 4, 3}), {"c"}), std::invalid_argument);
    EXPECT_THROW(writer.finish({3, 3}), std::invalid_argument);
  }
  try {
    FeatureCache cache(dir_.path());
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_THAT(error.what(), HasSubstr("No finished feature cache"));
  }
  {
    FeatureCacheWriter writer(dir_.path(), {}, 1);
    writer.append(torch::randn({2, 4, 3}), {"a", "b"});
    writer.finish({2, 2});
  }
  EXPECT_EQ(FeatureCache(dir_.path()).size(), 2);
  std::filesystem::remove(dir_ / "shard-00001.safetensors");
  EXPECT_THROW(FeatureCache cache(dir_.path()), std::runtime_error);
}

// A manifest naming a shard outside its folder (another cache's, any file) is refused.
TEST_F(FeatureCacheTest, AShardNamedOutsideTheFolderIsRefused) {
  const auto cache_dir = dir_ / "cache";
  {
    FeatureCacheWriter writer(cache_dir, {}, 1 << 20);
    writer.append(torch::randn({2, 4, 3}), {"a", "b"});
    writer.finish({2, 2});
  }
  std::filesystem::copy_file(cache_dir / "shard-00000.safetensors", dir_ / "shard-00000.safetensors");
  const std::string manifest = saccade::testing::read_file(cache_dir / "features.json");
  const auto at = manifest.find("\"shard-00000.safetensors\"");
  ASSERT_NE(at, std::string::npos);
  for (const std::string name : {"../shard-00000.safetensors", "..", ""}) {
    saccade::testing::write_file(
        cache_dir / "features.json", manifest.substr(0, at) + "\"" + name + "\"" + manifest.substr(at + 25));
    try {
      FeatureCache cache(cache_dir);
      ADD_FAILURE() << "accepted the shard '" << name << "'";
    } catch (const std::runtime_error& error) {
      EXPECT_THAT(
          error.what(), HasSubstr("the shard name '" + name + "' is not a file name in the cache's folder"));
    }
  }
}

// A writer that goes away unfinished (an extraction that failed) leaves the cache it was to
// replace whole, and nothing of its own behind.
TEST_F(FeatureCacheTest, AnUnfinishedWriterLeavesThePreviousCacheWhole) {
  const auto dir = dir_ / "train";
  const torch::Tensor rows = torch::randn({3, 2, 4});
  {
    FeatureCacheWriter writer(dir, {}, 2 * 4 * 2);  // 1 row per shard
    writer.append(rows, {"a", "b", "c"});
    writer.finish({1, 2});
  }
  {
    FeatureCacheWriter writer(dir, {}, 2 * 4 * 2);
    writer.append(torch::zeros({2, 2, 4}), {"x", "y"});
  }
  const FeatureCache cache(dir);
  EXPECT_EQ(cache.image_ids(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(torch::equal(cache.batch({2})[0], rows[2].to(torch::kHalf).to(torch::kFloat)));
  for (const auto& entry : std::filesystem::directory_iterator(dir_.path()))
    EXPECT_EQ(entry.path().filename(), "train");  // no temporary left
  {
    FeatureCacheWriter writer(dir, {}, 2 * 4 * 2);
    writer.append(torch::zeros({2, 2, 4}), {"x", "y"});
    writer.finish({1, 2});
  }
  EXPECT_EQ(FeatureCache(dir).image_ids(), (std::vector<std::string>{"x", "y"}));
  EXPECT_FALSE(std::filesystem::exists(dir / "shard-00002.safetensors"));  // the old third shard went
}

// A damaged shard's NaN is named with the shard and the image when a batch reads it.
TEST_F(FeatureCacheTest, NonFiniteRowsAreErrorsNamingTheShardAndImage) {
  torch::Tensor all = torch::randn({4, 2, 3});
  all[3][1][2] = std::numeric_limits<float>::quiet_NaN();
  FeatureCacheWriter writer(dir_.path(), {}, 2 * 2 * 3 * 2);  // 2 rows per shard
  writer.append(all, {"a", "b", "c", "d"});
  writer.finish({1, 2});
  const FeatureCache cache(dir_.path());
  EXPECT_EQ(cache.batch({0, 2}).size(0), 2);
  try {
    cache.batch({0, 3});
    FAIL() << "a NaN was read";
  } catch (const std::runtime_error& error) {
    EXPECT_EQ(
        std::string(error.what()), "Feature cache shard '" + (dir_ / "shard-00001.safetensors").string() +
                                       "' holds a NaN or infinite value in the row of image d; extract the "
                                       "features again");
  }
}

}  // namespace
}  // namespace saccade
