// `saccade prepare` end to end: the shapes world on disk, byte-identical for the same seed.
#include <gtest/gtest.h>

#include "test_util.h"

namespace saccade::testing {
namespace {

// Every regular file under `root` (relative path -> bytes), caches excluded.
std::map<std::string, std::string> files_under(const std::filesystem::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const auto relative = std::filesystem::relative(entry.path(), root).string();
    if (relative.rfind("cache/", 0) == 0) continue;
    files[relative] = read_file(entry.path());
  }
  return files;
}

TEST(Prepare, ShapesWorldIsByteIdenticalForTheSameSeed) {
  TempDir first, second, other;
  const std::vector<std::string> args = {
      "prepare", "-cp", (source_dir() / "configs").string(), "experiment=smoke"};
  const auto result = run_saccade(args, first.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("train: 48 images, 240 captions"), std::string::npos) << result.out;
  ASSERT_EQ(run_saccade(args, second.path()).exit_code, 0);
  auto other_args = args;
  other_args.push_back("dataset.shapes.seed=1");
  ASSERT_EQ(run_saccade(other_args, other.path()).exit_code, 0);

  const auto a = files_under(first / "datasets/shapes_smoke");
  const auto b = files_under(second / "datasets/shapes_smoke");
  EXPECT_GT(a.size(), 64u);  // 64 PNGs plus the split file and the truth sidecar
  EXPECT_TRUE(a.count("dataset_shapes.json"));
  EXPECT_TRUE(a.count("shapes_truth.json"));
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == files_under(other / "datasets/shapes_smoke"));
}

TEST(Prepare, MissingImagesFolderIsClearError) {
  TempDir work;
  write_file(work / "data/dataset_flickr8k.json", R"({"images": []})");
  const auto result = run_saccade(
      {"prepare", "-cp", (source_dir() / "configs").string(), "dataset=flickr8k",
       "dataset.root=" + (work / "data").string()},
      work.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  EXPECT_NE(result.err.find("Flicker8k_Dataset"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace saccade::testing
