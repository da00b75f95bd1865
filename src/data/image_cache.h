// ImageCache: a split's preprocessed uint8 images in one memory-mapped file, decoded once by
// `saccade prepare` (or the first run that needs it) so epochs never decode JPEGs again.
//
//   build_image_cache("cache/train_r256_c224.imgcache", paths, image_options, BadImagePolicy::skip);
//   ImageCache cache("cache/train_r256_c224.imgcache");
//   torch::Tensor image = cache.load(row);     // uint8 [crop, crop, 3]
//
// File layout (little-endian):
//   bytes 0..15    magic "SACCADE-IMGCACHE"
//   bytes 16..23   u64 offset of the JSON header (= 64 + rows * crop * crop * 3)
//   bytes 24..63   zero
//   bytes 64..     the rows, each crop * crop * 3 bytes (HWC, RGB), in the order of `images`
//   header         JSON {"version": 1, "rows": R, "height": H, "width": W, "image": {resize,
//                  crop, keep_aspect}, "images": [every path asked for, in order],
//                  "skipped": [{"index": i, "path": p, "reason": r}]}
// Rows hold the images that decoded, in order; skipped ones have no row. The file is written
// to a temporary name and renamed, so a reader never sees a partial cache. The mapping is
// shared by the page cache, so memory use does not grow with the dataset.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/image_source.h"

namespace saccade {

// What identifies a file's content cheaply: its size and modification time (ns); size -1 when it
// did not exist.
struct FileStamp {
  int64_t size = -1;
  int64_t modified_ns = 0;
  bool operator==(const FileStamp& other) const {
    return size == other.size && modified_ns == other.modified_ns;
  }
};
FileStamp stamp_of(const std::filesystem::path& path);

class ImageCache : public ImageSource {
 public:
  // Maps the file and validates it. Throws std::runtime_error naming the file when it is
  // missing, not a cache, truncated, or its header disagrees with its size.
  explicit ImageCache(const std::filesystem::path& path);
  ~ImageCache() override;
  ImageCache(const ImageCache&) = delete;
  ImageCache& operator=(const ImageCache&) = delete;

  int64_t size() const override { return rows_; }
  torch::Tensor load(int64_t row) const override;  // a copy out of the mapping

  // The images left out when it was built (BadImagePolicy::skip), in image order.
  const std::vector<SkippedImage>& skipped() const { return skipped_; }
  // Why it cannot stand for `images` under `image`, or "" when it can: other resize/crop/
  // keep_aspect, another list of images, or an image file whose size or modification time
  // changed since the cache was built (a replaced or repaired image; names the first).
  std::string staleness(const std::vector<std::filesystem::path>& images, const ImageOptions& image) const;

 private:
  ImageOptions image_;
  std::vector<std::filesystem::path> images_;
  std::vector<FileStamp> stamps_;  // each image file as it was when the cache was built
  std::vector<SkippedImage> skipped_;
  int64_t rows_ = 0;
  int64_t row_bytes_ = 0;
  const uint8_t* data_ = nullptr;  // first row
  void* mapping_ = nullptr;
  size_t mapping_size_ = 0;
};

// Decodes `images` through the pipeline on `threads` threads (0 = one per core) and writes the
// cache file, showing a progress bar. Under BadImagePolicy::fail the first bad image throws
// BadImageError and no file is written; under skip each bad image is logged and left out.
// Returns the skipped images.
std::vector<SkippedImage> build_image_cache(
    const std::filesystem::path& path,
    const std::vector<std::filesystem::path>& images,
    const ImageOptions& image,
    BadImagePolicy on_bad_image,
    int threads = 0);

}  // namespace saccade
