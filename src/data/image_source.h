// Image sources: where a split's preprocessed images come from, by row. Rows follow the
// split's image list, so a dataset maps its images to rows one to one.
//
//   FileImageSource files(paths, image_options);  // decode + resize + crop on every load
//   ImageCache cache(cache_file);                   // image_cache.h: memory-mapped, decoded once
//   torch::Tensor image = source.load(7);           // uint8 [crop, crop, 3]
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "data/image_pipeline.h"

namespace saccade {

// What happens to an image that cannot be used (missing, empty, not an image, corrupt).
enum class BadImagePolicy {
  fail,  // stop with an error naming the file
  skip,  // leave the image out; every skipped file is logged and counted
};
std::string to_string(BadImagePolicy policy);
// "fail" | "skip"; throws std::invalid_argument naming the value otherwise.
BadImagePolicy parse_bad_image_policy(const std::string& name);

// An image left out under BadImagePolicy::skip, with why.
struct SkippedImage {
  std::filesystem::path path;
  std::string reason;  // "the file is empty (0 bytes)"
};

// `more` added to `into`, each image once (a loader skips a bad image again every epoch).
void add_distinct(std::vector<SkippedImage>& into, const std::vector<SkippedImage>& more);

class ImageSource {
 public:
  virtual ~ImageSource() = default;
  // Number of rows.
  virtual int64_t size() const = 0;
  // The image of row `row` as uint8 [H, W, 3] (H = W = the pipeline's crop). Safe to call from
  // several threads at once. Throws BadImageError when the image cannot be used.
  virtual torch::Tensor load(int64_t row) const = 0;
};

// Decodes and preprocesses image files on every load (no cache).
class FileImageSource : public ImageSource {
 public:
  FileImageSource(std::vector<std::filesystem::path> paths, ImageOptions options);
  int64_t size() const override { return static_cast<int64_t>(paths_.size()); }
  torch::Tensor load(int64_t row) const override;

 private:
  std::vector<std::filesystem::path> paths_;
  ImageOptions options_;
};

}  // namespace saccade
