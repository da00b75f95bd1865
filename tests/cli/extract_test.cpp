// `saccade extract --images` end to end: the saccade binary runs a small_cnn with saved weights
// over hand-written PPM images; the grids must equal the encoder run here on inputs normalized
// by hand. Also the usage errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/feature_cache.h"
#include "io/safetensors.h"
#include "models/small_cnn.h"
#include "models/weights.h"
#include "test_util.h"

namespace saccade {
namespace {

using saccade::testing::run_saccade;
using saccade::testing::TempDir;
using saccade::testing::write_file;
using ::testing::HasSubstr;

// A binary PPM (P6) of `pixels` uint8 [H, W, 3].
void write_ppm(const std::filesystem::path& path, const torch::Tensor& pixels) {
  std::string text =
      "P6\n" + std::to_string(pixels.size(1)) + " " + std::to_string(pixels.size(0)) + "\n255\n";
  text.append(static_cast<const char*>(pixels.data_ptr()), static_cast<size_t>(pixels.numel()));
  write_file(path, text);
}

class ExtractTest : public ::testing::Test {
 protected:
  ExtractTest() { torch::manual_seed(0); }
  TempDir dir_;
};

TEST_F(ExtractTest, ImagesModeWritesOneGridPerFileMatchingTheEncoder) {
  const torch::Tensor a = torch::randint(0, 256, {16, 16, 3}, torch::kUInt8);
  const torch::Tensor b = torch::randint(0, 256, {16, 16, 3}, torch::kUInt8);
  write_ppm(dir_ / "images" / "a.ppm", a);
  write_ppm(dir_ / "images" / "b.ppm", b);
  write_file(dir_ / "images" / "notes.txt", "not an image");

  EncoderOptions options;
  options.channels = {8, 8};
  auto encoder = std::make_shared<SmallCnnImpl>(options);
  encoder->set_trainable_blocks(0);
  encoder->eval();
  save_state_dict(*encoder, dir_ / "cnn.safetensors");

  const auto out = dir_ / "grids.safetensors";
  const auto result = run_saccade(
      {"extract", "--images", (dir_ / "images").string(), "--out", out.string(), "encoder=small_cnn",
       "encoder.channels=[8,8]", "encoder.grid=null",
       "encoder.weights=" + (dir_ / "cnn.safetensors").string(), "dataset.image.resize=16",
       "dataset.image.crop=16"});
  ASSERT_EQ(result.exit_code, 0) << result.err;

  const SafetensorsReader grids(out);
  EXPECT_EQ(grids.keys(), (std::vector<std::string>{"a.ppm", "b.ppm"}));
  EXPECT_EQ(grids.metadata().at("encoder.name"), "small_cnn");
  // ImageNet normalization by hand: (x / 255 - mean) / std per channel.
  const torch::Tensor mean = torch::tensor({0.485f, 0.456f, 0.406f}).view({3, 1, 1});
  const torch::Tensor std = torch::tensor({0.229f, 0.224f, 0.225f}).view({3, 1, 1});
  for (const auto& [name, pixels] : {std::pair<std::string, torch::Tensor>{"a.ppm", a}, {"b.ppm", b}}) {
    const torch::Tensor input =
        (pixels.permute({2, 0, 1}).to(torch::kFloat) / 255 - mean) / std;         // [3, 16, 16]
    const torch::Tensor expected = encoder->forward_grid(input.unsqueeze(0))[0];  // [8, 8, 8]
    const torch::Tensor got = grids.get(name);
    ASSERT_EQ(got.sizes(), torch::IntArrayRef({8, 8, 8})) << name;
    EXPECT_TRUE(torch::allclose(got, expected, 1e-4, 1e-5))
        << name << " max diff " << (got - expected).abs().max().item<float>();
  }
}

TEST_F(ExtractTest, SplitModeWritesAFeatureCachePerSplit) {
  const auto root = dir_ / "shapes";
  const auto result = run_saccade(
      {"extract", "dataset=shapes", "dataset.root=" + root.string(), "dataset.shapes.train_images=12",
       "dataset.shapes.val_images=3", "dataset.shapes.test_images=2", "encoder=small_cnn",
       "encoder.channels=[8,16]", "encoder.grid=[4,4]"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const std::vector<std::pair<std::string, int64_t>> splits = {{"train", 12}, {"val", 3}, {"test", 2}};
  for (const auto& [split, count] : splits) {
    const FeatureCache cache(root / "cache" / "features" / "small_cnn" / split);
    EXPECT_EQ(cache.size(), count) << split;
    EXPECT_EQ(cache.dim(), 16) << split;
    EXPECT_EQ(cache.grid_size(), (std::array<int64_t, 2>{4, 4})) << split;
    EXPECT_EQ(cache.description().at("split"), split);
    EXPECT_EQ(cache.batch({0}).sizes(), torch::IntArrayRef({1, 16, 16}));
  }
}

TEST_F(ExtractTest, ImagesModeUsageErrors) {
  write_ppm(dir_ / "one" / "x.ppm", torch::zeros({16, 16, 3}, torch::kUInt8));
  write_ppm(dir_ / "two" / "x.ppm", torch::zeros({16, 16, 3}, torch::kUInt8));
  const auto no_out = run_saccade({"extract", "--images", (dir_ / "one").string()});
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_THAT(no_out.err, HasSubstr("needs --out"));

  const auto missing =
      run_saccade({"extract", "--images", (dir_ / "none").string(), "--out", "x.safetensors"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("No such file or folder"));

  const auto twice = run_saccade(
      {"extract", "--images", (dir_ / "one").string(), (dir_ / "two").string(), "--out",
       (dir_ / "g.safetensors").string(), "dataset.image.resize=16", "dataset.image.crop=16"});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_THAT(twice.err, HasSubstr("Two images share the file name 'x.ppm'"));
}

}  // namespace
}  // namespace saccade
