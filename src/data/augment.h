// Train-time augmentation that keeps captions true: mild photometric jitter, and horizontal
// flips only for captions that do not talk about left and right.
//
//   SampleTransform augment = make_augmentation(options.augment, vocab);  // empty when all off
//   Loader loader(train, loader_options, image_options, augment);
//
// Operates on the uint8 [H, W, 3] image before normalization; geometric changes that would
// move objects out of the crop (random crops, rotations) are deliberately absent, since the
// shapes world's ground-truth boxes and captions must stay valid.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "data/dataset.h"
#include "data/vocabulary.h"

namespace saccade {

struct AugmentOptions {
  // Probability of flipping a training image left-right; 0 = never.
  double hflip = 0.0;
  // A caption containing any of these words is never flipped (its meaning would change).
  std::vector<std::string> hflip_blocking_words = {"left", "right"};
  // Brightness jitter: pixels are scaled by a factor drawn uniformly from [1 - b, 1 + b]; 0 = off.
  double brightness = 0.0;
  // Contrast jitter: pixels move away from / towards the image mean by a factor drawn uniformly
  // from [1 - c, 1 + c]; 0 = off.
  double contrast = 0.0;
};

// Reads dataset.augment.{hflip, hflip_blocking_words, brightness, contrast}.
AugmentOptions augment_options_from(const Config& config);
// Throws std::invalid_argument: hflip in [0, 1], brightness and contrast in [0, 1].
void validate(const AugmentOptions& options);

// The transform for the loader, or an empty function when every augmentation is off.
// When a blocking word is not in `vocabulary` (it reads as <unk>), captions with <unk> are not
// flipped either.
SampleTransform make_augmentation(const AugmentOptions& options, const Vocabulary& vocabulary);

}  // namespace saccade
