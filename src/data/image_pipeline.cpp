// Image decoding, resizing and normalization (OpenCV for decode and resize, torch for batches).
#include "data/image_pipeline.h"

#include "io/temporaries.h"

#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <optional>
#include <utility>

namespace saccade {
namespace {

// The sizes an image passes through: resized to (height, width), then cut at (top, left).
struct Geometry {
  int height = 0;
  int width = 0;
  int top = 0;
  int left = 0;
};

Geometry geometry_for(int height, int width, const ImageOptions& options) {
  Geometry g;
  if (!options.keep_aspect) {
    g.height = g.width = options.resize;
  } else if (height <= width) {
    g.height = options.resize;
    g.width = static_cast<int>(static_cast<int64_t>(width) * options.resize / height);
  } else {
    g.width = options.resize;
    g.height = static_cast<int>(static_cast<int64_t>(height) * options.resize / width);
  }
  g.top = (g.height - options.crop) / 2;
  g.left = (g.width - options.crop) / 2;
  return g;
}

bool starts_with(const std::string& bytes, const char* magic, size_t length, size_t offset = 0) {
  return bytes.size() >= offset + length && std::memcmp(bytes.data() + offset, magic, length) == 0;
}

// The container format from the first bytes, or "" when it is none OpenCV reads here.
std::string sniff_format(const std::string& bytes) {
  if (starts_with(bytes, "\xFF\xD8\xFF", 3)) return "jpeg";
  if (starts_with(bytes, "\x89PNG\r\n\x1A\n", 8)) return "png";
  if (starts_with(bytes, "BM", 2)) return "bmp";
  if (starts_with(bytes, "II*\0", 4) || starts_with(bytes, "MM\0*", 4)) return "tiff";
  if (starts_with(bytes, "RIFF", 4) && starts_with(bytes, "WEBP", 4, 8)) return "webp";
  if (bytes.size() >= 2 && bytes[0] == 'P' && bytes[1] >= '1' && bytes[1] <= '6') return "pnm";
  return "";
}

// Width x height from a PNG, JPEG, BMP or PNM header, without decoding (OpenCV writes its own
// lines about a PNM it cannot allocate); nullopt for the other formats or a header that does not
// say.
std::optional<std::pair<int64_t, int64_t>> header_size(const std::string& bytes, const std::string& format) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  const size_t size = bytes.size();
  const auto big_endian = [&](size_t at, int count) {
    int64_t value = 0;
    for (int i = 0; i < count; ++i) value = value << 8 | b[at + i];
    return value;
  };
  if (format == "png" && size >= 24) return std::pair{big_endian(16, 4), big_endian(20, 4)};  // IHDR
  if (format == "bmp" && size >= 26) {
    int32_t width = 0, height = 0;
    std::memcpy(&width, b + 18, 4);  // little-endian, as the machines saccade runs on
    std::memcpy(&height, b + 22, 4);
    return std::pair{std::abs(int64_t{width}), std::abs(int64_t{height})};  // negative height: top-down
  }
  if (format == "pnm") {
    // "P5", then width, height (and the maximum value), separated by whitespace and '#' comments.
    std::vector<int64_t> fields;
    size_t i = 2;
    while (fields.size() < 2 && i < size) {
      if (std::isspace(b[i])) {
        ++i;
      } else if (b[i] == '#') {
        while (i < size && b[i] != '\n' && b[i] != '\r') ++i;
      } else if (std::isdigit(b[i])) {
        int64_t value = 0;
        for (; i < size && std::isdigit(b[i]) && value < (int64_t{1} << 40); ++i)
          value = value * 10 + (b[i] - '0');
        fields.push_back(value);
      } else {
        return std::nullopt;
      }
    }
    if (fields.size() == 2) return std::pair{fields[0], fields[1]};
    return std::nullopt;
  }
  if (format != "jpeg") return std::nullopt;
  // Walk the markers to the first start-of-frame (SOF0..SOF15 but DHT C4, JPG C8, DAC CC).
  for (size_t i = 2; i + 9 <= size;) {
    if (b[i] != 0xFF) return std::nullopt;
    const unsigned char marker = b[i + 1];
    if (marker == 0xFF) {
      ++i;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD9)) {
      i += 2;
      continue;
    }
    if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC)
      return std::pair{big_endian(i + 7, 2), big_endian(i + 5, 2)};
    i += 2 + static_cast<size_t>(big_endian(i + 2, 2));
  }
  return std::nullopt;
}

void check_pixels(const std::filesystem::path& path, int64_t width, int64_t height, int64_t max_pixels) {
  // A header may claim up to 2^32 x 2^32 pixels: compared without forming the product.
  if (height == 0 || width <= max_pixels / height) return;
  throw BadImageError(
      path,
      "the image is " + std::to_string(width) + " x " + std::to_string(height) +
          " pixels, more than data.max_pixels=" + std::to_string(max_pixels),
      /*too_large=*/true);
}

// libjpeg pads a cut-off JPEG with gray and reports success, so check that an end-of-image
// marker (FF D9) follows the last start-of-scan marker (FF DA). Compressed data never holds
// FF DA or FF D9 (FF is stuffed as FF 00), and searching from the last scan ignores the EOI of an
// embedded EXIF thumbnail while allowing trailing bytes some cameras append after the EOI.
bool jpeg_is_complete(const std::string& bytes) {
  const auto* b = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t scan = 0;
  for (size_t i = bytes.size() - 1; i >= 2 && scan == 0; --i) {
    if (b[i - 1] == 0xFF && b[i] == 0xDA) scan = i;
  }
  if (scan == 0) return false;
  for (size_t i = scan + 1; i + 1 < bytes.size(); ++i) {
    if (b[i] == 0xFF && b[i + 1] == 0xD9) return true;
  }
  return false;
}

// OpenCV's imdecode writes lines of its own to std::cerr about some files it fails on (a cut-off
// PNM, a BMP header it asserts on), beside saccade's one-line error. From the first decode on,
// std::cerr writes through this buffer: what a thread writes while it decodes is dropped, what
// any other code writes passes through. It lives as long as the process, as std::cerr does.
class QuietWhileDecoding : public std::streambuf {
 public:
  // Drops this thread's writes to std::cerr while it lives.
  class Scope {
   public:
    Scope() {
      static QuietWhileDecoding* const filter = [] {
        auto* installed = new QuietWhileDecoding(std::cerr.rdbuf());
        std::cerr.rdbuf(installed);
        return installed;
      }();
      static_cast<void>(filter);
      quiet_ = true;
    }
    ~Scope() { quiet_ = false; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
  };

 protected:
  int overflow(int c) override {
    if (quiet_ || traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    return target_->sputc(traits_type::to_char_type(c));
  }
  std::streamsize xsputn(const char* text, std::streamsize count) override {
    return quiet_ ? count : target_->sputn(text, count);
  }
  int sync() override { return target_->pubsync(); }

 private:
  explicit QuietWhileDecoding(std::streambuf* target) : target_(target) {}

  static thread_local bool quiet_;
  std::streambuf* const target_;
};

thread_local bool QuietWhileDecoding::quiet_ = false;

// Why `path` cannot be opened as a file, or "" when it can.
std::string file_problem(const std::filesystem::path& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return "the file does not exist";
  if (!std::filesystem::is_regular_file(path, error)) return "not a regular file";
  if (!std::ifstream(path, std::ios::binary)) return "the file cannot be opened";
  return "";
}

// Why `head` (the first bytes of a file) is not a supported image, or "" when it looks like one.
std::string unsupported_format_reason(const std::string& head) {
  if (head.empty()) return "the file is empty (0 bytes)";
  if (!sniff_format(head).empty()) return "";
  if (starts_with(head, "GIF8", 4)) return "GIF is not supported; convert it to PNG";
  return "not an image in a supported format (JPEG, PNG, BMP, TIFF, WebP, PNM)";
}

// A copy of a continuous 8-bit 3-channel Mat. A plain memcpy: torch's copy kernels would start
// an OpenMP team inside every loader worker.
torch::Tensor tensor_from_mat(const cv::Mat& rgb) {
  torch::Tensor out = torch::empty({rgb.rows, rgb.cols, 3}, torch::kUInt8);
  std::memcpy(out.data_ptr<uint8_t>(), rgb.data, static_cast<size_t>(rgb.rows) * rgb.cols * 3);
  return out;
}

}  // namespace

ImageOptions image_options_from(const Config& config) {
  ImageOptions options;
  options.resize = config.get<int>("dataset.image.resize");
  options.crop = config.get<int>("dataset.image.crop");
  options.keep_aspect = config.get<bool>("dataset.image.keep_aspect");
  options.mean = config.get<std::vector<float>>("dataset.image.mean");
  options.std = config.get<std::vector<float>>("dataset.image.std");
  options.max_pixels = config.get<int64_t>("data.max_pixels");
  return options;
}

void validate(const ImageOptions& options) {
  if (options.crop < 1) {
    throw std::invalid_argument("dataset.image.crop must be >= 1 pixel, got " + std::to_string(options.crop));
  }
  if (options.resize < options.crop) {
    throw std::invalid_argument(
        "dataset.image.resize (" + std::to_string(options.resize) + ") must be >= dataset.image.crop (" +
        std::to_string(options.crop) + ")");
  }
  if (options.mean.size() != 3 || options.std.size() != 3) {
    throw std::invalid_argument("dataset.image.mean and dataset.image.std must have 3 values (R, G, B)");
  }
  for (float value : options.std) {
    if (!(value > 0))
      throw std::invalid_argument("dataset.image.std values must be > 0, got " + std::to_string(value));
  }
  if (options.max_pixels < 1)
    throw std::invalid_argument("data.max_pixels must be >= 1, got " + std::to_string(options.max_pixels));
}

BadImageError::BadImageError(const std::filesystem::path& path, const std::string& reason, bool too_large)
    : std::runtime_error("Could not decode image " + path.string() + ": " + reason),
      path_(path),
      reason_(reason),
      too_large_(too_large) {}

std::string check_image_file(const std::filesystem::path& path) {
  const std::string problem = file_problem(path);
  if (!problem.empty()) return problem;
  std::ifstream in(path, std::ios::binary);
  std::string head(16, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return unsupported_format_reason(head);
}

torch::Tensor decode_image(const std::filesystem::path& path, int64_t max_pixels) {
  const std::string problem = file_problem(path);
  if (!problem.empty()) throw BadImageError(path, problem);
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode_image_bytes(bytes, path, max_pixels);
}

torch::Tensor decode_image_bytes(
    const std::string& bytes, const std::filesystem::path& name, int64_t max_pixels) {
  std::string problem = unsupported_format_reason(bytes);
  if (!problem.empty()) throw BadImageError(name, problem);
  const std::string format = sniff_format(bytes);
  if (format == "jpeg" && !jpeg_is_complete(bytes)) {
    throw BadImageError(name, "the JPEG data is truncated (no end-of-image marker)");
  }
  if (const auto size = header_size(bytes, format)) check_pixels(name, size->first, size->second, max_pixels);
  const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8UC1, const_cast<char*>(bytes.data()));
  cv::Mat bgr;
  try {
    const QuietWhileDecoding::Scope quiet;
    bgr = cv::imdecode(raw, cv::IMREAD_COLOR | cv::IMREAD_IGNORE_ORIENTATION);
  } catch (const cv::Exception&) {
    // Some decoders throw on corrupt data where others return nothing: the same bad image.
  }
  if (bgr.empty()) throw BadImageError(name, "the " + format + " data is corrupt or truncated");
  check_pixels(name, bgr.cols, bgr.rows, max_pixels);
  cv::Mat rgb;
  cv::cvtColor(bgr, rgb, cv::COLOR_BGR2RGB);
  return tensor_from_mat(rgb);
}

namespace {

// uint8 [H, W, 3] RGB encoded as `extension` (".png", ".jpg") says; "" when OpenCV cannot.
std::string encoded_image(
    const torch::Tensor& rgb, const std::string& extension, const std::vector<int>& parameters) {
  TORCH_CHECK(
      rgb.dim() == 3 && rgb.size(2) == 3 && rgb.scalar_type() == torch::kUInt8, "expected uint8 [H, W, 3]");
  const torch::Tensor source = rgb.contiguous();
  const cv::Mat image(
      static_cast<int>(source.size(0)), static_cast<int>(source.size(1)), CV_8UC3,
      source.data_ptr<uint8_t>());
  cv::Mat bgr;
  cv::cvtColor(image, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> bytes;
  if (!cv::imencode(extension, bgr, bytes, parameters)) return "";
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace

void write_image_file(const std::filesystem::path& path, const torch::Tensor& rgb) {
  const std::string extension = path.extension().string();
  std::vector<int> parameters;
  if (extension == ".png") {
    parameters = {cv::IMWRITE_PNG_COMPRESSION, 6};
  } else if (extension == ".jpg" || extension == ".jpeg") {
    parameters = {cv::IMWRITE_JPEG_QUALITY, 95};
  } else {
    throw std::invalid_argument(
        "Cannot write image " + path.string() + ": the extension must be .png, .jpg or .jpeg");
  }
  const std::string bytes = encoded_image(rgb, extension, parameters);
  if (bytes.empty()) throw std::runtime_error("Could not encode image " + path.string());
  write_file_atomically(path, bytes);
}

std::string encode_png(const torch::Tensor& rgb) {
  const std::string bytes = encoded_image(rgb, ".png", {cv::IMWRITE_PNG_COMPRESSION, 6});
  if (bytes.empty()) throw std::runtime_error("Could not encode an image as PNG");
  return bytes;
}

torch::Tensor resize_and_crop(const torch::Tensor& rgb, const ImageOptions& options) {
  TORCH_CHECK(
      rgb.dim() == 3 && rgb.size(2) == 3 && rgb.scalar_type() == torch::kUInt8, "expected uint8 [H, W, 3]");
  const torch::Tensor source = rgb.contiguous();
  const int height = static_cast<int>(source.size(0));
  const int width = static_cast<int>(source.size(1));
  const Geometry g = geometry_for(height, width, options);
  const cv::Mat image(height, width, CV_8UC3, source.data_ptr<uint8_t>());
  cv::Mat resized = image;
  if (g.height != height || g.width != width) {
    const bool shrinking = g.height <= height && g.width <= width;
    cv::resize(
        image, resized, cv::Size(g.width, g.height), 0, 0, shrinking ? cv::INTER_AREA : cv::INTER_LINEAR);
  }
  return tensor_from_mat(resized(cv::Rect(g.left, g.top, options.crop, options.crop)).clone());
}

torch::Tensor load_image(const std::filesystem::path& path, const ImageOptions& options) {
  return crop_decoded_image(decode_image(path, options.max_pixels), path, options);
}

torch::Tensor crop_decoded_image(
    const torch::Tensor& rgb, const std::filesystem::path& name, const ImageOptions& options) {
  // The whole image is resized before the crop (as torchvision's Resize and CenterCrop do), so a
  // long strip would grow to more pixels than any image is allowed.
  const int64_t height = rgb.size(0), width = rgb.size(1);
  const int64_t long_side = options.keep_aspect
                                ? std::max(height, width) * options.resize / std::min(height, width)
                                : options.resize;
  if (long_side > options.max_pixels / options.resize) {
    throw BadImageError(
        name,
        "the image is " + std::to_string(width) + " x " + std::to_string(height) + " pixels: resized to " +
            std::to_string(options.resize) + " on its shorter side it would be " + std::to_string(long_side) +
            " long, more than data.max_pixels=" + std::to_string(options.max_pixels) + " pixels in all",
        /*too_large=*/true);
  }
  try {
    return resize_and_crop(rgb, options);
  } catch (const cv::Exception& error) {
    throw BadImageError(name, "OpenCV could not resize it: " + error.err);
  }
}

torch::Tensor normalize_images(const torch::Tensor& images, const ImageOptions& options) {
  TORCH_CHECK(
      images.dim() == 4 && images.size(3) == 3 && images.scalar_type() == torch::kUInt8,
      "expected uint8 [B, H, W, 3]");
  // A plain loop over a 3 x 256 table (each entry computed exactly as the formula says) rather than
  // torch ops, which would start an OpenMP team inside every loader worker.
  float table[3][256];
  for (int c = 0; c < 3; ++c) {
    for (int x = 0; x < 256; ++x)
      table[c][x] = (static_cast<float>(x) / 255.0f - options.mean[c]) / options.std[c];
  }
  const torch::Tensor source = images.contiguous();
  const int64_t batch = source.size(0);
  const int64_t pixels = source.size(1) * source.size(2);
  torch::Tensor out =
      torch::empty({batch, 3, source.size(1), source.size(2)}, torch::kFloat);  // [B, 3, H, W]
  const uint8_t* in = source.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  for (int64_t b = 0; b < batch; ++b) {
    const uint8_t* image = in + b * pixels * 3;
    float* planes = dst + b * pixels * 3;
    for (int64_t p = 0; p < pixels; ++p) {
      planes[p] = table[0][image[3 * p]];
      planes[pixels + p] = table[1][image[3 * p + 1]];
      planes[2 * pixels + p] = table[2][image[3 * p + 2]];
    }
  }
  return out;
}

Box map_box(const Box& box, int height, int width, const ImageOptions& options) {
  const Geometry g = geometry_for(height, width, options);
  const float scale_x = static_cast<float>(g.width) / static_cast<float>(width);
  const float scale_y = static_cast<float>(g.height) / static_cast<float>(height);
  const float side = static_cast<float>(options.crop);
  auto clip = [side](float value) { return std::clamp(value, 0.0f, side); };
  Box out;
  out.x0 = clip(box.x0 * scale_x - static_cast<float>(g.left));
  out.x1 = clip(box.x1 * scale_x - static_cast<float>(g.left));
  out.y0 = clip(box.y0 * scale_y - static_cast<float>(g.top));
  out.y1 = clip(box.y1 * scale_y - static_cast<float>(g.top));
  return out;
}

}  // namespace saccade
