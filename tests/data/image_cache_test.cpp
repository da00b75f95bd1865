// The image cache: rows equal the pipeline's output, the skip/fail policies, staleness checks,
// and corrupt cache files.
#include "data/image_cache.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <chrono>
#include <stdexcept>

#include "data_fixtures.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

ImageOptions small_options() {
  ImageOptions options;
  options.resize = 6;
  options.crop = 4;
  return options;
}

TEST(ImageCache, RowsEqualThePipelineOutput) {
  TempDir dir;
  std::vector<std::filesystem::path> paths;
  for (int i = 0; i < 5; ++i) {
    paths.push_back(dir / ("img" + std::to_string(i) + ".png"));
    write_image(paths.back(), pattern_image(8 + i, 12 - i));
  }
  const auto file = dir / "cache" / "train.imgcache";
  EXPECT_TRUE(build_image_cache(file, paths, small_options(), BadImagePolicy::fail, 2).empty());
  const ImageCache cache(file);
  ASSERT_EQ(cache.size(), 5);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(torch::equal(cache.load(i), load_image(paths[i], small_options()))) << "row " << i;
  }
  EXPECT_EQ(cache.staleness(paths, small_options()), "");
  ImageOptions other = small_options();
  other.crop = 3;
  EXPECT_EQ(cache.staleness(paths, other), "it was built with other dataset.image settings");
  EXPECT_EQ(cache.staleness({paths[0]}, small_options()), "it was built from another list of images");
  // Normalization settings do not change the cached pixels, so they do not make it stale.
  other = small_options();
  other.mean = {0.5f, 0.5f, 0.5f};
  EXPECT_EQ(cache.staleness(paths, other), "");
}

// An image replaced under the same name (same size even, an hour later) makes the cache stale.
TEST(ImageCache, AReplacedImageMakesItStale) {
  TempDir dir;
  const std::vector<std::filesystem::path> paths = {dir / "a.png", dir / "b.png"};
  write_image(paths[0], pattern_image(8, 8));
  write_image(paths[1], pattern_image(8, 8));
  build_image_cache(dir / "x.imgcache", paths, small_options(), BadImagePolicy::fail, 1);
  const auto written = std::filesystem::last_write_time(paths[1]);
  write_image(paths[1], torch::zeros({8, 8, 3}, torch::kUInt8));
  std::filesystem::last_write_time(paths[1], written + std::chrono::hours(1));
  EXPECT_EQ(
      ImageCache(dir / "x.imgcache").staleness(paths, small_options()),
      paths[1].string() + " changed since it was built");
}

TEST(ImageCache, SkipLeavesOutBadImagesAndRecordsThem) {
  TempDir dir;
  write_image(dir / "a.png", pattern_image(6, 6));
  write_file(dir / "b.png", "");
  write_image(dir / "c.png", pattern_image(7, 6));
  const std::vector<std::filesystem::path> paths = {
      dir / "a.png", dir / "b.png", dir / "missing.png", dir / "c.png"};
  const auto skipped = build_image_cache(dir / "x.imgcache", paths, small_options(), BadImagePolicy::skip, 1);
  ASSERT_EQ(skipped.size(), 2u);
  EXPECT_EQ(skipped[0].path, dir / "b.png");
  EXPECT_EQ(skipped[0].reason, "the file is empty (0 bytes)");
  EXPECT_EQ(skipped[1].path, dir / "missing.png");
  const ImageCache cache(dir / "x.imgcache");
  EXPECT_EQ(cache.size(), 2);
  EXPECT_TRUE(torch::equal(cache.load(1), load_image(dir / "c.png", small_options())));
  ASSERT_EQ(cache.skipped().size(), 2u);
  EXPECT_EQ(cache.skipped()[1].reason, "the file does not exist");
  EXPECT_EQ(cache.staleness(paths, small_options()), "");
  // A skipped image repaired since is a change: the cache is rebuilt to take it in.
  write_image(dir / "b.png", pattern_image(6, 6));
  EXPECT_EQ(
      cache.staleness(paths, small_options()), (dir / "b.png").string() + " changed since it was built");
}

TEST(ImageCache, FailNamesTheFileAndWritesNothing) {
  TempDir dir;
  write_image(dir / "a.png", pattern_image(6, 6));
  write_file(dir / "bad.png", "not a png");
  try {
    build_image_cache(
        dir / "x.imgcache", {dir / "a.png", dir / "bad.png"}, small_options(), BadImagePolicy::fail);
    FAIL() << "no error";
  } catch (const BadImageError& error) {
    EXPECT_EQ(error.path(), dir / "bad.png");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "x.imgcache"));
  int leftovers = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    leftovers += entry.path().extension() != ".png";
  EXPECT_EQ(leftovers, 0);  // no temporary file left behind
}

TEST(ImageCache, CorruptFilesAreRuntimeErrorsNamingTheFile) {
  TempDir dir;
  write_image(dir / "a.png", pattern_image(6, 6));
  build_image_cache(dir / "good.imgcache", {dir / "a.png"}, small_options(), BadImagePolicy::fail);
  const std::string bytes = read_file(dir / "good.imgcache");
  auto open_error = [&](const std::string& name, const std::string& content) {
    write_file(dir / name, content);
    try {
      ImageCache cache(dir / name);
    } catch (const std::runtime_error& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  const std::string prefix = "Image cache " + (dir / "").string();
  EXPECT_EQ(open_error("short", "tiny"), prefix + "short is too short to be a cache; delete it to rebuild");
  EXPECT_EQ(
      open_error("magic", std::string(100, 'z')),
      prefix + "magic is not a saccade image cache; delete it to rebuild");
  EXPECT_EQ(open_error("cut", bytes.substr(0, 80)), prefix + "cut is truncated; delete it to rebuild");
  EXPECT_EQ(
      open_error("header", bytes.substr(0, bytes.size() - 3))
          .rfind(prefix + "header has a malformed header", 0),
      0u);
  EXPECT_THROW(ImageCache(dir / "none.imgcache"), std::runtime_error);
}

}  // namespace
}  // namespace saccade::testing
