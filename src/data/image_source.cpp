// Image files as an ImageSource, and the bad-image policy names.
#include "data/image_source.h"

#include <algorithm>
#include <stdexcept>

#include "base/enum_names.h"

namespace saccade {

const EnumNames<BadImagePolicy> kBadImagePolicyNames(
    "bad-image policy", {{BadImagePolicy::fail, "fail"}, {BadImagePolicy::skip, "skip"}});

std::string to_string(BadImagePolicy policy) {
  return kBadImagePolicyNames.name(policy);
}

BadImagePolicy parse_bad_image_policy(const std::string& name) {
  return kBadImagePolicyNames.parse(name);
}

FileImageSource::FileImageSource(std::vector<std::filesystem::path> paths, ImageOptions options)
    : paths_(std::move(paths)), options_(std::move(options)) {}

torch::Tensor FileImageSource::load(int64_t row) const {
  return load_image(paths_.at(static_cast<size_t>(row)), options_);
}

void add_distinct(std::vector<SkippedImage>& into, const std::vector<SkippedImage>& more) {
  for (const SkippedImage& image : more) {
    const bool known = std::any_of(
        into.begin(), into.end(), [&](const SkippedImage& seen) { return seen.path == image.path; });
    if (!known) into.push_back(image);
  }
}

}  // namespace saccade
