// The image pipeline: decoding of every color layout, resize + crop checked pixel by pixel
// against hand-worked values, normalization by hand, box mapping, and every bad-file case.
#include "data/image_pipeline.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <iostream>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "data_fixtures.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

ImageOptions sizes(int resize, int crop, bool keep_aspect = true) {
  ImageOptions options;
  options.resize = resize;
  options.crop = crop;
  options.keep_aspect = keep_aspect;
  return options;
}

// The BadImageError message decode_image raises for `path`, without the "Could not decode
// image <path>: " prefix (checked once below).
std::string decode_reason(
    const std::filesystem::path& path, int64_t max_pixels = ImageOptions::kDefaultMaxPixels) {
  try {
    decode_image(path, max_pixels);
  } catch (const BadImageError& error) {
    EXPECT_EQ(error.path(), path);
    EXPECT_EQ(std::string(error.what()), "Could not decode image " + path.string() + ": " + error.reason());
    return error.reason();
  }
  return "(no error)";
}

void expect_pixels(const torch::Tensor& actual, const torch::Tensor& expected) {
  ASSERT_EQ(actual.sizes(), expected.sizes());
  const auto diff = (actual.to(torch::kInt) - expected.to(torch::kInt)).abs();
  const auto index = diff.argmax().item<int64_t>();
  EXPECT_EQ(diff.max().item<int>(), 0) << "first largest difference at flat index " << index;
}

TEST(ImagePipeline, DecodesPngExactlyAsRgb) {
  TempDir dir;
  const torch::Tensor image = pattern_image(5, 7);
  write_image(dir / "a.png", image);
  expect_pixels(decode_image(dir / "a.png"), image);
}

TEST(ImagePipeline, GrayscaleRgbaAnd16BitBecomeRgb) {
  TempDir dir;
  cv::Mat gray(2, 3, CV_8UC1);
  for (int i = 0; i < 6; ++i) gray.data[i] = static_cast<uint8_t>(40 * i);
  ASSERT_TRUE(cv::imwrite((dir / "gray.png").string(), gray));
  const torch::Tensor from_gray = decode_image(dir / "gray.png");
  ASSERT_EQ(from_gray.sizes(), (std::vector<int64_t>{2, 3, 3}));
  for (int c = 0; c < 3; ++c) EXPECT_EQ(from_gray[1][2][c].item<int>(), 200);

  cv::Mat bgra(1, 2, CV_8UC4, cv::Scalar(10, 20, 30, 0));  // B G R A, fully transparent
  ASSERT_TRUE(cv::imwrite((dir / "rgba.png").string(), bgra));
  const torch::Tensor from_rgba = decode_image(dir / "rgba.png");
  ASSERT_EQ(from_rgba.sizes(), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(from_rgba[0][1][0].item<int>(), 30);  // R: alpha dropped, not composited
  EXPECT_EQ(from_rgba[0][1][2].item<int>(), 10);  // B

  cv::Mat deep(1, 1, CV_16UC3, cv::Scalar(65535, 0, 32896));
  ASSERT_TRUE(cv::imwrite((dir / "deep.png").string(), deep));
  const torch::Tensor from_deep = decode_image(dir / "deep.png");
  EXPECT_EQ(from_deep[0][0][0].item<int>(), 128);  // R = 32896 / 257
  EXPECT_EQ(from_deep[0][0][2].item<int>(), 255);  // B = 65535 / 257
}

TEST(ImagePipeline, DecodesJpegCloseToTheSource) {
  TempDir dir;
  const torch::Tensor image = torch::full({16, 16, 3}, 120, torch::kUInt8);
  write_image(dir / "a.jpg", image);
  const torch::Tensor decoded = decode_image(dir / "a.jpg");
  ASSERT_EQ(decoded.sizes(), image.sizes());
  EXPECT_LE((decoded.to(torch::kInt) - 120).abs().max().item<int>(), 2);
}

TEST(ImagePipeline, ResizeToTheCurrentSizeIsExactlyTheIdentity) {
  const torch::Tensor image = pattern_image(9, 9);
  expect_pixels(resize_and_crop(image, sizes(9, 9)), image);
  expect_pixels(resize_and_crop(image, sizes(9, 9, false)), image);
}

TEST(ImagePipeline, CenterCropOffsetsAreFloorOfHalfTheExcess) {
  // 7 x 10, shorter side already 7: no resize; crop 5 starts at row (7-5)/2 = 1, column (10-5)/2 = 2.
  const torch::Tensor image = pattern_image(7, 10);
  const torch::Tensor out = resize_and_crop(image, sizes(7, 5));
  expect_pixels(out, image.slice(0, 1, 6).slice(1, 2, 7));
  // 10 x 7 (portrait): column (7-5)/2 = 1, row (10-5)/2 = 2.
  const torch::Tensor tall = pattern_image(10, 7);
  expect_pixels(resize_and_crop(tall, sizes(7, 5)), tall.slice(0, 2, 7).slice(1, 1, 6));
}

TEST(ImagePipeline, HalvingAveragesTwoByTwoBlocksThenCrops) {
  // 8 x 12 made of 2x2 blocks: block (by, bx) has base 20*by + 3*bx in R with offsets
  // {0, 4, 8, 13} (mean +6.25 -> 6), G = 200 - base with offsets {0, 1, 2, 4} (mean +1.75 -> 2),
  // B = 77. Resizing the shorter side 8 -> 4 gives 4 x 6 block means; the 4 x 4 crop starts at
  // column (6 - 4) / 2 = 1.
  torch::Tensor image = torch::empty({8, 12, 3}, torch::kUInt8);
  auto in = image.accessor<uint8_t, 3>();
  const int r_offset[2][2] = {{0, 4}, {8, 13}};
  const int g_offset[2][2] = {{0, 1}, {2, 4}};
  for (int y = 0; y < 8; ++y) {
    for (int x = 0; x < 12; ++x) {
      const int base = 20 * (y / 2) + 3 * (x / 2);
      in[y][x][0] = static_cast<uint8_t>(base + r_offset[y % 2][x % 2]);
      in[y][x][1] = static_cast<uint8_t>(200 - base + g_offset[y % 2][x % 2]);
      in[y][x][2] = 77;
    }
  }
  torch::Tensor expected = torch::empty({4, 4, 3}, torch::kUInt8);
  auto want = expected.accessor<uint8_t, 3>();
  for (int y = 0; y < 4; ++y) {
    for (int x = 0; x < 4; ++x) {
      const int base = 20 * y + 3 * (x + 1);
      want[y][x][0] = static_cast<uint8_t>(base + 6);
      want[y][x][1] = static_cast<uint8_t>(200 - base + 2);
      want[y][x][2] = 77;
    }
  }
  expect_pixels(resize_and_crop(image, sizes(4, 4)), expected);
}

TEST(ImagePipeline, AspectPreservingSizesFollowTorchvision) {
  // 10 x 23: shorter side 10 -> 5, longer floor(23 * 5 / 10) = 11; crop 5.
  EXPECT_EQ(resize_and_crop(pattern_image(10, 23), sizes(5, 5)).sizes(), (std::vector<int64_t>{5, 5, 3}));
  // Enlarging works too (bilinear): 4 x 4 -> 8 x 8.
  const torch::Tensor flat = torch::full({4, 4, 3}, 99, torch::kUInt8);
  expect_pixels(resize_and_crop(flat, sizes(8, 8)), torch::full({8, 8, 3}, 99, torch::kUInt8));
}

TEST(ImagePipeline, NormalizationMatchesHandComputedValues) {
  torch::Tensor pixels = torch::empty({1, 1, 2, 3}, torch::kUInt8);  // [B, H, W, 3]
  auto p = pixels.accessor<uint8_t, 4>();
  const uint8_t values[2][3] = {{0, 128, 255}, {255, 0, 51}};
  for (int x = 0; x < 2; ++x) {
    for (int c = 0; c < 3; ++c) p[0][0][x][c] = values[x][c];
  }
  const torch::Tensor out = normalize_images(pixels, ImageOptions{});
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{1, 3, 1, 2}));
  ASSERT_EQ(out.scalar_type(), torch::kFloat);
  auto o = out.accessor<float, 4>();
  // (0/255 - 0.485) / 0.229, (128/255 - 0.456) / 0.224, (255/255 - 0.406) / 0.225, by hand:
  EXPECT_NEAR(o[0][0][0][0], -2.1179039, 1e-6);
  EXPECT_NEAR(o[0][1][0][0], 0.2051821, 1e-6);
  EXPECT_NEAR(o[0][2][0][0], 2.6400000, 1e-6);
  // (1 - 0.485) / 0.229, (0 - 0.456) / 0.224, (0.2 - 0.406) / 0.225:
  EXPECT_NEAR(o[0][0][0][1], 2.2489083, 1e-6);
  EXPECT_NEAR(o[0][1][0][1], -2.0357143, 1e-6);
  EXPECT_NEAR(o[0][2][0][1], -0.9155556, 1e-6);
  // Bit-exact with the float32 formula evaluated in its order.
  EXPECT_EQ(o[0][1][0][0], (128.0f / 255.0f - 0.456f) / 0.224f);
}

TEST(ImagePipeline, MapBoxFollowsResizeAndCrop) {
  // 100 x 200 -> shorter side 50: 50 x 100, scale 0.5; crop 50 starts at column 25.
  const ImageOptions options = sizes(50, 50);
  EXPECT_EQ(map_box(Box{60, 10, 100, 30}, 100, 200, options), (Box{5, 5, 25, 15}));
  EXPECT_EQ(map_box(Box{0, 0, 40, 10}, 100, 200, options), (Box{0, 0, 0, 5}));  // left of the crop: empty
  EXPECT_EQ(map_box(Box{180, 90, 200, 100}, 100, 200, options), (Box{50, 45, 50, 50}));
  // Identity geometry leaves boxes alone.
  EXPECT_EQ(map_box(Box{3, 4, 10, 12}, 64, 64, sizes(64, 64)), (Box{3, 4, 10, 12}));
}

// The size is read from the header before decoding (PNG, JPEG, BMP) or checked after it (others).
TEST(ImagePipeline, ImagesOfMoreThanMaxPixelsAreBadImages) {
  TempDir dir;
  const torch::Tensor image = pattern_image(50, 100);  // 100 wide, 50 high
  for (const char* name : {"a.png", "a.jpg"}) {
    write_image(dir / name, image);
    EXPECT_EQ(
        decode_reason(dir / name, 4999), "the image is 100 x 50 pixels, more than data.max_pixels=4999");
    EXPECT_EQ(decode_image(dir / name, 5000).sizes(), (std::vector<int64_t>{50, 100, 3})) << name;
  }
  cv::Mat bgr(50, 100, CV_8UC3, cv::Scalar(10, 20, 30));
  for (const char* name : {"a.bmp", "a.tiff"}) {
    ASSERT_TRUE(cv::imwrite((dir / name).string(), bgr));
    EXPECT_EQ(
        decode_reason(dir / name, 4999), "the image is 100 x 50 pixels, more than data.max_pixels=4999");
  }
  // A PNG header claiming 20000 x 20000 pixels is refused without decoding what follows.
  const std::string png = read_file(dir / "a.png");
  std::string huge = png.substr(0, 16) + std::string("\x00\x00\x4E\x20\x00\x00\x4E\x20", 8) + png.substr(24);
  write_file(dir / "huge.png", huge);
  EXPECT_EQ(
      decode_reason(dir / "huge.png"),
      "the image is 20000 x 20000 pixels, more than data.max_pixels=100000000");
  // The largest sizes a PNG header can claim: their product does not fit 64 bits.
  huge = png.substr(0, 16) + std::string("\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF", 8) + png.substr(24);
  write_file(dir / "huge.png", huge);
  EXPECT_EQ(
      decode_reason(dir / "huge.png"),
      "the image is 4294967295 x 4294967295 pixels, more than data.max_pixels=100000000");
}

// An image is resized whole before the crop: a strip whose resized long side would exceed
// data.max_pixels in all is a bad image named with its sizes, not an allocation failure.
TEST(ImagePipeline, StripsTooLongToResizeAreBadImages) {
  TempDir dir;
  write_image(dir / "strip.png", pattern_image(2, 300));  // 300 wide, 2 high
  ImageOptions options;
  options.resize = 64;
  options.crop = 64;
  options.max_pixels = 64 * 9599;  // the strip resizes to 64 x 9600
  try {
    load_image(dir / "strip.png", options);
    ADD_FAILURE() << "the strip was resized";
  } catch (const BadImageError& error) {
    EXPECT_EQ(
        error.reason(),
        "the image is 300 x 2 pixels: resized to 64 on its shorter side it would be 9600 long, more than "
        "data.max_pixels=614336 pixels in all");
  }
  options.max_pixels = 64 * 9600;
  EXPECT_EQ(load_image(dir / "strip.png", options).sizes(), (std::vector<int64_t>{64, 64, 3}));
}

// OpenCV writes its own lines to std::cerr about some files it fails on (each bad file below made
// OpenCV 4.6's imdecode print "can't read data" or "header"): saccade's one line is all that is
// printed. The same kinds of file, whole, decode.
TEST(ImagePipeline, OpenCvsOwnLinesAboutABadFileAreDropped) {
  TempDir dir;
  const std::vector<std::string> bad = {
      "P6\n4 4\n255\n" + std::string(20, 'a'),
      "P5\n4 4\n65535\n" + std::string(31, 'a'),
      "P4\n16 4\n" + std::string(7, 'a'),
      "P2\n2 2\n255\n1 2 3 4",  // OpenCV reads the byte after the 4
      "P3\n1 1\n255\n1 2 x\n",
      "P2\n1 1\n255\n9999999999\n",
      "P5\n1 1\n70000\n\1\1",
      std::string("BMN\0\0\0\0\0\0\0\x36\0\0\0\x28\0\0\0\3\0\x10\0\2\0\0\0\1\0\x18\0\0\x3a", 32),
  };
  const std::vector<std::string> good = {
      "P6\n4 4\n255\n" + std::string(48, 'a'), "P5\n4 4\n65535\n" + std::string(32, 'a'),
      "P4\n16 4\n" + std::string(8, 'a'), "P2 # size next\n2 2\n255\n1 2 3 4\n", "P1\n2 2\n1011"};
  ::testing::internal::CaptureStderr();
  for (size_t i = 0; i < bad.size(); ++i) {
    const auto path = dir / ("bad" + std::to_string(i));
    write_file(path, bad[i]);
    const std::string format = i + 1 < bad.size() ? "pnm" : "bmp";
    EXPECT_EQ(decode_reason(path), "the " + format + " data is corrupt or truncated") << bad[i];
  }
  for (size_t i = 0; i < good.size(); ++i) {
    const auto path = dir / ("good" + std::to_string(i));
    write_file(path, good[i]);
    EXPECT_EQ(decode_reason(path), "(no error)") << good[i];
  }
  std::cerr << "passes" << std::flush;  // what is not written while decoding
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "passes");
}

TEST(ImagePipeline, BadFilesAreNamedWithTheReason) {
  TempDir dir;
  EXPECT_EQ(decode_reason(dir / "missing.jpg"), "the file does not exist");
  EXPECT_EQ(decode_reason(dir.path()), "not a regular file");
  write_file(dir / "empty.jpg", "");
  EXPECT_EQ(decode_reason(dir / "empty.jpg"), "the file is empty (0 bytes)");
  write_file(dir / "notes.jpg", "just some text, not an image\n");
  EXPECT_EQ(
      decode_reason(dir / "notes.jpg"),
      "not an image in a supported format (JPEG, PNG, BMP, TIFF, WebP, PNM)");
  write_file(dir / "anim.gif", "GIF89a\x01\x00\x01\x00");
  EXPECT_EQ(decode_reason(dir / "anim.gif"), "GIF is not supported; convert it to PNG");

  write_image(dir / "whole.jpg", pattern_image(32, 32));
  const std::string jpeg = read_file(dir / "whole.jpg");
  write_file(dir / "cut.jpg", jpeg.substr(0, jpeg.size() / 2));
  EXPECT_EQ(decode_reason(dir / "cut.jpg"), "the JPEG data is truncated (no end-of-image marker)");
  write_file(dir / "garbage.jpg", "\xFF\xD8\xFF\xFF\xDA" + std::string(200, 'x') + "\xFF\xD9");
  EXPECT_EQ(decode_reason(dir / "garbage.jpg"), "the jpeg data is corrupt or truncated");

  // Bytes some cameras append after the end-of-image marker do not make a JPEG bad.
  write_file(dir / "trailer.jpg", jpeg + std::string(10000, '\x01'));
  EXPECT_EQ(decode_image(dir / "trailer.jpg").sizes(), (std::vector<int64_t>{32, 32, 3}));

  write_image(dir / "whole.png", pattern_image(32, 32));
  const std::string png = read_file(dir / "whole.png");
  write_file(dir / "cut.png", png.substr(0, png.size() / 2));
  EXPECT_EQ(decode_reason(dir / "cut.png"), "the png data is corrupt or truncated");
}

TEST(ImagePipeline, CheckImageFileIsCheapAndAgreesOnObviousCases) {
  TempDir dir;
  write_image(dir / "ok.png", pattern_image(4, 4));
  EXPECT_EQ(check_image_file(dir / "ok.png"), "");
  EXPECT_EQ(check_image_file(dir / "missing.png"), "the file does not exist");
  write_file(dir / "empty.png", "");
  EXPECT_EQ(check_image_file(dir / "empty.png"), "the file is empty (0 bytes)");
  write_file(dir / "text.png", "hello");
  EXPECT_EQ(
      check_image_file(dir / "text.png"),
      "not an image in a supported format (JPEG, PNG, BMP, TIFF, WebP, PNM)");
}

TEST(ImagePipeline, ValidateNamesTheKey) {
  ImageOptions options;
  EXPECT_NO_THROW(validate(options));
  options.crop = 300;
  try {
    validate(options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "dataset.image.resize (256) must be >= dataset.image.crop (300)");
  }
  options = ImageOptions{};
  options.crop = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = ImageOptions{};
  options.mean = {0.5f};
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = ImageOptions{};
  options.std = {1.0f, 0.0f, 1.0f};
  EXPECT_THROW(validate(options), std::invalid_argument);
}

}  // namespace
}  // namespace saccade::testing
