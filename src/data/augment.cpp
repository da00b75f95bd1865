// Caption-preserving augmentation of uint8 training images.
#include "data/augment.h"

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace saccade {

AugmentOptions augment_options_from(const Config& config) {
  AugmentOptions options;
  options.hflip = config.get<double>("dataset.augment.hflip");
  options.hflip_blocking_words = config.get<std::vector<std::string>>("dataset.augment.hflip_blocking_words");
  options.brightness = config.get<double>("dataset.augment.brightness");
  options.contrast = config.get<double>("dataset.augment.contrast");
  return options;
}

void validate(const AugmentOptions& options) {
  auto check = [](double value, const char* key) {
    if (!(value >= 0.0 && value <= 1.0)) {
      throw std::invalid_argument(std::string(key) + " must be in [0, 1], got " + std::to_string(value));
    }
  };
  check(options.hflip, "dataset.augment.hflip");
  check(options.brightness, "dataset.augment.brightness");
  check(options.contrast, "dataset.augment.contrast");
}

SampleTransform make_augmentation(const AugmentOptions& options, const Vocabulary& vocabulary) {
  if (options.hflip == 0.0 && options.brightness == 0.0 && options.contrast == 0.0) return {};
  std::vector<int64_t> blocking;
  for (const auto& word : options.hflip_blocking_words) blocking.push_back(vocabulary.id(word));
  return [options, blocking](Sample& sample, Rng& rng) {
    // Draw every random number whether or not it is used, so one choice never shifts the others.
    const bool flip = rng.bernoulli(options.hflip);
    const double brightness = 1.0 + options.brightness * (2.0 * rng.uniform() - 1.0);
    const double contrast = 1.0 + options.contrast * (2.0 * rng.uniform() - 1.0);
    const bool blocked = std::any_of(sample.tokens.begin(), sample.tokens.end(), [&](int64_t id) {
      return std::find(blocking.begin(), blocking.end(), id) != blocking.end();
    });
    torch::Tensor image = sample.image.contiguous();  // [H, W, 3]
    const int64_t height = image.size(0);
    const int64_t width = image.size(1);
    uint8_t* pixels = image.data_ptr<uint8_t>();
    if (flip && !blocked) {
      for (int64_t y = 0; y < height; ++y) {
        uint8_t* row = pixels + y * width * 3;
        for (int64_t x = 0; x < width / 2; ++x) {
          for (int c = 0; c < 3; ++c) std::swap(row[3 * x + c], row[3 * (width - 1 - x) + c]);
        }
      }
    }
    if (brightness != 1.0 || contrast != 1.0) {
      const int64_t count = height * width * 3;
      double mean = 0.0;
      for (int64_t i = 0; i < count; ++i) mean += pixels[i];
      mean /= static_cast<double>(std::max<int64_t>(count, 1));
      for (int64_t i = 0; i < count; ++i) {
        const double value = ((pixels[i] - mean) * contrast + mean) * brightness;
        pixels[i] = static_cast<uint8_t>(std::clamp(std::lround(value), 0L, 255L));
      }
    }
    sample.image = image;
  };
}

}  // namespace saccade
