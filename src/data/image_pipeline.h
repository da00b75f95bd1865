// The image pipeline: decode (OpenCV), resize, center crop, normalize.
//
//   torch::Tensor rgb = decode_image("coco/val2014/x.jpg");    // uint8 [H, W, 3], RGB
//   torch::Tensor input = resize_and_crop(rgb, options);        // uint8 [crop, crop, 3]
//   torch::Tensor batch = normalize_images(stacked, options);   // float32 [B, 3, crop, crop]
//
// Images travel as uint8 tensors [H, W, 3] (rows top to bottom, RGB interleaved) until a batch
// is normalized, so caches and queues hold 4x less than float. With the paper's setting
// (resize 256, crop 224, keep_aspect) the shorter side is scaled to 256 with the longer side
// floor(long * 256 / short) (torchvision's rule), then the centered 224x224 square is cut out
// (offset floor((side - 224) / 2)). Shrinking uses area averaging (OpenCV INTER_AREA), enlarging
// bilinear interpolation; a resize to the size the image already has is skipped, so it is
// exactly the identity. OpenCV stays behind this header.
#pragma once

#include <torch/types.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"

namespace saccade {

struct ImageOptions {
  // Pixels. With keep_aspect: the shorter side after resizing (the longer one follows the aspect
  // ratio); without: both sides. Must be >= crop.
  int resize = 256;
  // Pixels: the side of the centered square cut out after resizing; the model sees crop x crop.
  int crop = 224;
  // false = plain resize to resize x resize, ignoring the aspect ratio.
  bool keep_aspect = true;
  // Per-channel (R, G, B) mean and standard deviation of x/255, subtracted and divided by in
  // normalize_images. Defaults: ImageNet's, which pretrained torchvision encoders expect.
  std::vector<float> mean = {0.485f, 0.456f, 0.406f};
  std::vector<float> std = {0.229f, 0.224f, 0.225f};
  // The largest image decoded (width x height, data.max_pixels): a small file may hold a huge
  // image (a 430 KB PNG of 20000 x 20000 pixels decodes to 1.2 GB, three times over).
  int64_t max_pixels = kDefaultMaxPixels;
  static constexpr int64_t kDefaultMaxPixels = 100'000'000;
};

// Reads dataset.image.{resize, crop, keep_aspect, mean, std} and data.max_pixels.
ImageOptions image_options_from(const Config& config);
// Throws std::invalid_argument: crop >= 1, resize >= crop, mean and std of 3 values, std > 0,
// max_pixels >= 1.
void validate(const ImageOptions& options);

// An image file that cannot be used: missing, empty, not an image, corrupt or truncated.
// what() is one sentence naming the file ("Could not decode image a.jpg: the file is empty").
class BadImageError : public std::runtime_error {
 public:
  // `too_large`: the image is refused for its size (data.max_pixels), not for its content.
  BadImageError(const std::filesystem::path& path, const std::string& reason, bool too_large = false);
  const std::filesystem::path& path() const { return path_; }
  const std::string& reason() const { return reason_; }
  bool too_large() const { return too_large_; }

 private:
  std::filesystem::path path_;
  std::string reason_;
  bool too_large_;
};

// The cheap checks made before a split is used without a cache: the file exists, is not empty
// and starts like a supported image format (reads 16 bytes). Returns why it fails, or "" when
// it passes; corrupt data after a good header is only found by decoding.
std::string check_image_file(const std::filesystem::path& path);

// Decodes a JPEG, PNG, BMP, TIFF, WebP or PNM file into uint8 [H, W, 3] RGB. Grayscale is
// replicated to three channels, an alpha channel is dropped (as PIL's convert("RGB")), 16-bit
// samples are scaled to 8 bits, EXIF orientation is ignored (as PIL and torchvision do). Throws
// BadImageError for a missing or empty file, an unknown format, a decoding failure, or a JPEG
// with no end-of-image marker after its last scan (libjpeg would return it gray-filled), and an
// image of more than `max_pixels` pixels (found in the header before decoding for PNG, JPEG and
// BMP, after it for the other formats).
torch::Tensor decode_image(
    const std::filesystem::path& path, int64_t max_pixels = ImageOptions::kDefaultMaxPixels);

// decode_image for an image's bytes already in memory (an upload); `name` stands for the file in
// the errors.
torch::Tensor decode_image_bytes(
    const std::string& bytes,
    const std::filesystem::path& name,
    int64_t max_pixels = ImageOptions::kDefaultMaxPixels);

// Writes uint8 [H, W, 3] RGB as PNG (compression level 6, lossless) or JPEG (quality 95), chosen
// by the extension (.png, .jpg, .jpeg). Throws std::invalid_argument for another extension,
// std::runtime_error when the file cannot be written.
void write_image_file(const std::filesystem::path& path, const torch::Tensor& rgb);

// uint8 [H, W, 3] RGB as the bytes of a PNG file (compression level 6), as write_image_file writes.
std::string encode_png(const torch::Tensor& rgb);

// The pipeline's geometry for a source image: uint8 [H, W, 3] -> uint8 [crop, crop, 3].
torch::Tensor resize_and_crop(const torch::Tensor& rgb, const ImageOptions& options);

// decode_image + crop_decoded_image.
torch::Tensor load_image(const std::filesystem::path& path, const ImageOptions& options);

// resize_and_crop of a decoded image, refused (BadImageError naming `name`) when resizing its
// shorter side would make more than max_pixels pixels, or when OpenCV cannot resize it.
torch::Tensor crop_decoded_image(
    const torch::Tensor& rgb, const std::filesystem::path& name, const ImageOptions& options);

// uint8 [B, H, W, 3] -> float32 [B, 3, H, W], each value (x / 255 - mean[c]) / std[c] computed in
// float32 in that order.
torch::Tensor normalize_images(const torch::Tensor& images, const ImageOptions& options);

// An axis-aligned box in pixels: x from the left edge, y from the top, [x0, x1) x [y0, y1).
struct Box {
  float x0 = 0;
  float y0 = 0;
  float x1 = 0;
  float y1 = 0;
  bool operator==(const Box& other) const {
    return x0 == other.x0 && y0 == other.y0 && x1 == other.x1 && y1 == other.y1;
  }
};

// Where a box drawn on a source image of `height` x `width` lands in the pipeline's crop x crop
// output: scaled like the image, shifted by the crop offset, clipped to the crop (an empty box,
// x0 == x1 or y0 == y1, when it falls outside).
Box map_box(const Box& box, int height, int width, const ImageOptions& options);

}  // namespace saccade
