// The memory-mapped image cache: building it from image files and reading rows back.
#include "data/image_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <torch/torch.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <stdexcept>

#include "data/parallel.h"
#include "io/json.h"
#include "io/log.h"
#include "io/progress.h"
#include "io/temporaries.h"

namespace saccade {
namespace {

constexpr char kMagic[] = "SACCADE-IMGCACHE";  // 16 bytes without the terminating zero
constexpr size_t kMagicSize = 16;
constexpr uint64_t kDataOffset = 64;

void put_u64(char* out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xFF);
}

uint64_t get_u64(const uint8_t* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | in[i];
  return value;
}

[[noreturn]] void cache_error(const std::filesystem::path& path, const std::string& what) {
  throw std::runtime_error("Image cache " + path.string() + " " + what + "; delete it to rebuild");
}

}  // namespace

FileStamp stamp_of(const std::filesystem::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return {};
  return {
      static_cast<int64_t>(info.st_size),
      static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
}

ImageCache::ImageCache(const std::filesystem::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("Could not open image cache " + path.string());
  struct stat info {};
  if (::fstat(fd, &info) != 0 || info.st_size < static_cast<off_t>(kDataOffset)) {
    ::close(fd);
    cache_error(path, "is too short to be a cache");
  }
  mapping_size_ = static_cast<size_t>(info.st_size);
  void* mapping = ::mmap(nullptr, mapping_size_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (mapping == MAP_FAILED) throw std::runtime_error("Could not map image cache " + path.string());
  mapping_ = mapping;
  const auto* bytes = static_cast<const uint8_t*>(mapping_);
  try {
    if (std::memcmp(bytes, kMagic, kMagicSize) != 0) cache_error(path, "is not a saccade image cache");
    const uint64_t header_offset = get_u64(bytes + kMagicSize);
    if (header_offset < kDataOffset || header_offset > mapping_size_) cache_error(path, "is truncated");
    Json header;
    try {
      header = parse_json(
          std::string_view(
              reinterpret_cast<const char*>(bytes + header_offset), mapping_size_ - header_offset),
          path.string());
      const int64_t version = header.at("version").as_int64();
      if (version != 1 && version != 2) cache_error(path, "has an unknown version");
      rows_ = header.at("rows").as_int64();
      const int64_t height = header.at("height").as_int64();
      const int64_t width = header.at("width").as_int64();
      const Json& image = header.at("image");
      image_.resize = static_cast<int>(image.at("resize").as_int64());
      image_.crop = static_cast<int>(image.at("crop").as_int64());
      image_.keep_aspect = image.at("keep_aspect").as_bool();
      for (const Json& item : header.at("images").as_array()) images_.emplace_back(item.as_string());
      if (version >= 2) {  // version 1 recorded no files: staleness() calls it stale
        for (const Json& item : header.at("files").as_array())
          stamps_.push_back({item.at(0).as_int64(), item.at(1).as_int64()});
        if (stamps_.size() != images_.size()) cache_error(path, "has an inconsistent header");
      }
      for (const Json& item : header.at("skipped").as_array()) {
        skipped_.push_back({item.at("path").as_string(), item.at("reason").as_string()});
      }
      row_bytes_ = height * width * 3;
      if (height != image_.crop || width != image_.crop || rows_ < 0 ||
          rows_ + static_cast<int64_t>(skipped_.size()) != static_cast<int64_t>(images_.size())) {
        cache_error(path, "has an inconsistent header");
      }
    } catch (const std::invalid_argument& error) {
      cache_error(path, std::string("has a malformed header (") + error.what() + ")");
    }
    if (kDataOffset + static_cast<uint64_t>(rows_ * row_bytes_) != header_offset)
      cache_error(path, "is truncated");
  } catch (...) {
    ::munmap(mapping_, mapping_size_);
    throw;
  }
  data_ = bytes + kDataOffset;
}

ImageCache::~ImageCache() {
  ::munmap(mapping_, mapping_size_);
}

torch::Tensor ImageCache::load(int64_t row) const {
  TORCH_CHECK(row >= 0 && row < rows_, "image cache row ", row, " out of range [0, ", rows_, ")");
  const int64_t side = image_.crop;
  torch::Tensor image = torch::empty({side, side, 3}, torch::kUInt8);
  std::memcpy(image.data_ptr<uint8_t>(), data_ + row * row_bytes_, static_cast<size_t>(row_bytes_));
  return image;
}

std::string ImageCache::staleness(
    const std::vector<std::filesystem::path>& images, const ImageOptions& image) const {
  if (image.resize != image_.resize || image.crop != image_.crop || image.keep_aspect != image_.keep_aspect)
    return "it was built with other dataset.image settings";
  if (images != images_) return "it was built from another list of images";
  if (stamps_.size() != images_.size())
    return "it was built by an older saccade that did not record its files";
  for (size_t i = 0; i < images.size(); ++i) {
    if (!(stamp_of(images[i]) == stamps_[i])) return images[i].string() + " changed since it was built";
  }
  return "";
}

std::vector<SkippedImage> build_image_cache(
    const std::filesystem::path& path,
    const std::vector<std::filesystem::path>& images,
    const ImageOptions& image,
    BadImagePolicy on_bad_image,
    int threads) {
  threads = resolve_threads(threads);
  AtomicFile out(path);
  out.write(std::string(kDataOffset, '\0'));  // the prefix, filled in last
  // Stamped before decoding: a file changed while the cache is built makes it stale.
  Json::Array files;
  for (const auto& source : images) {
    const FileStamp stamp = stamp_of(source);
    files.push_back(Json::array({stamp.size, stamp.modified_ns}));
  }

  std::vector<SkippedImage> skipped;
  Json::Array skipped_json;
  int64_t rows = 0;
  const int64_t total = static_cast<int64_t>(images.size());
  const int64_t chunk = 32 * threads;
  ProgressBar bar(total, "caching " + path.filename().string(), "img");
  for (int64_t start = 0; start < total; start += chunk) {
    const int64_t count = std::min(chunk, total - start);
    std::vector<torch::Tensor> decoded(static_cast<size_t>(count));
    std::vector<std::string> problems(static_cast<size_t>(count));
    parallel_for(count, threads, [&](int64_t k) {
      try {
        decoded[k] = load_image(images[start + k], image);
      } catch (const BadImageError& error) {
        problems[k] = error.reason();
      }
    });
    for (int64_t k = 0; k < count; ++k) {
      const auto& source = images[start + k];
      if (!problems[k].empty()) {
        if (on_bad_image == BadImagePolicy::fail) throw BadImageError(source, problems[k]);
        log::warn() << "Skipping image " << source.string() << ": " << problems[k];
        skipped.push_back({source, problems[k]});
        skipped_json.push_back(
            Json::object({{"index", start + k}, {"path", source.string()}, {"reason", problems[k]}}));
        continue;
      }
      out.write(decoded[k].data_ptr<uint8_t>(), static_cast<size_t>(decoded[k].numel()));
      ++rows;
    }
    bar.advance(count);
  }
  bar.finish();
  Json::Array paths;
  for (const auto& source : images) paths.emplace_back(source.string());
  const Json header = Json::object(
      {{"version", 2},
       {"rows", rows},
       {"height", image.crop},
       {"width", image.crop},
       {"image",
        Json::object({{"resize", image.resize}, {"crop", image.crop}, {"keep_aspect", image.keep_aspect}})},
       {"images", std::move(paths)},
       {"files", std::move(files)},
       {"skipped", std::move(skipped_json)}});
  out.write(dump_json(header));
  char prefix[kDataOffset] = {};
  std::memcpy(prefix, kMagic, kMagicSize);
  put_u64(prefix + kMagicSize, kDataOffset + static_cast<uint64_t>(rows) * image.crop * image.crop * 3);
  out.write_at(0, prefix, sizeof(prefix));
  out.commit();
  return skipped;
}

}  // namespace saccade
