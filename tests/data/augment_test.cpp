// Augmentation: flips keep captions true (none when they mention left/right), jitter stays in
// its range, and all-off means no transform at all.
#include "data/augment.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <stdexcept>

namespace saccade::testing {
namespace {

const Vocabulary kVocab(std::vector<std::string>{"a", "circle", "left", "of", "right"});

Sample sample_with(const std::vector<std::string>& words) {
  Sample sample;
  sample.image = torch::arange(2 * 3 * 3, torch::kUInt8).view({2, 3, 3});  // [H=2, W=3, 3]
  sample.tokens = kVocab.encode(words);
  return sample;
}

TEST(Augment, AllOffIsNoTransform) {
  EXPECT_FALSE(make_augmentation(AugmentOptions{}, kVocab));
}

TEST(Augment, FlipsUnlessTheCaptionTalksAboutLeftOrRight) {
  AugmentOptions options;
  options.hflip = 1.0;
  const SampleTransform augment = make_augmentation(options, kVocab);
  ASSERT_TRUE(augment);
  Rng rng(1);

  Sample plain = sample_with({"a", "circle"});
  const torch::Tensor original = plain.image.clone();
  augment(plain, rng);
  EXPECT_TRUE(torch::equal(plain.image, original.flip({1})));  // columns reversed, channels kept

  for (const char* word : {"left", "right"}) {
    Sample spatial = sample_with({"a", "circle", word, "of", "a", "circle"});
    augment(spatial, rng);
    EXPECT_TRUE(torch::equal(spatial.image, original)) << word;
  }
}

TEST(Augment, BlockingWordsOutsideTheVocabularyBlockUnknownWords) {
  AugmentOptions options;
  options.hflip = 1.0;
  options.hflip_blocking_words = {"leftmost"};  // not in the vocabulary: reads as <unk>
  const SampleTransform augment = make_augmentation(options, kVocab);
  Rng rng(2);
  Sample unknown = sample_with({"a", "leftmost", "circle"});
  const torch::Tensor original = unknown.image.clone();
  augment(unknown, rng);
  EXPECT_TRUE(torch::equal(unknown.image, original));
  Sample known = sample_with({"a", "circle"});
  augment(known, rng);
  EXPECT_FALSE(torch::equal(known.image, original));
}

TEST(Augment, BrightnessStaysWithinItsFactorRange) {
  AugmentOptions options;
  options.brightness = 0.5;
  const SampleTransform augment = make_augmentation(options, kVocab);
  bool changed = false;
  for (uint64_t seed = 0; seed < 20; ++seed) {
    Rng rng(seed);
    Sample sample;
    sample.image = torch::full({4, 4, 3}, 100, torch::kUInt8);
    augment(sample, rng);
    const int value = sample.image[0][0][0].item<int>();
    EXPECT_GE(value, 50);
    EXPECT_LE(value, 150);
    EXPECT_TRUE(torch::equal(sample.image, torch::full({4, 4, 3}, value, torch::kUInt8)));
    changed = changed || value != 100;
  }
  EXPECT_TRUE(changed);
}

TEST(Augment, ContrastKeepsTheMeanAndSaturates) {
  AugmentOptions options;
  options.contrast = 1.0;
  const SampleTransform augment = make_augmentation(options, kVocab);
  Rng rng(5);
  Sample sample;
  sample.image = torch::tensor({0, 255}, torch::kUInt8).repeat({3}).view({1, 2, 3});
  augment(sample, rng);
  EXPECT_EQ(sample.image.to(torch::kInt).sum().item<int>(), 3 * 255);  // symmetric around the mean 127.5
}

TEST(Augment, ValidateRanges) {
  AugmentOptions options;
  options.hflip = 1.5;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = AugmentOptions{};
  options.contrast = -0.1;
  EXPECT_THROW(validate(options), std::invalid_argument);
  EXPECT_NO_THROW(validate(AugmentOptions{}));
}

}  // namespace
}  // namespace saccade::testing
