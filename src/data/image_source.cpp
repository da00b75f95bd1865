// Image files as an ImageSource, and the bad-image policy names.
#include "data/image_source.h"

#include <stdexcept>

namespace saccade {

std::string to_string(BadImagePolicy policy) {
  return policy == BadImagePolicy::skip ? "skip" : "fail";
}

BadImagePolicy parse_bad_image_policy(const std::string& name) {
  if (name == "fail") return BadImagePolicy::fail;
  if (name == "skip") return BadImagePolicy::skip;
  throw std::invalid_argument("data.on_bad_image must be fail or skip, got '" + name + "'");
}

FileImageSource::FileImageSource(std::vector<std::filesystem::path> paths, ImageOptions options)
    : paths_(std::move(paths)), options_(std::move(options)) {}

torch::Tensor FileImageSource::load(int64_t row) const {
  return load_image(paths_.at(static_cast<size_t>(row)), options_);
}

}  // namespace saccade
