// Caption diversity against counts worked by hand.
#include "eval/diversity.h"

#include <gtest/gtest.h>

namespace saccade {
namespace {

TEST(CaptionDiversity, CountsWordsNgramsAndNovelCaptions) {
  const std::map<std::string, std::string> candidates = {
      {"1", "a red circle"}, {"2", "a red circle"}, {"3", "a blue square"}};
  const std::unordered_set<std::string> training = {"a red circle", "a green circle"};
  const DiversityScores scores = caption_diversity(candidates, {}, &training);
  EXPECT_EQ(scores.captions, 3);
  EXPECT_EQ(scores.vocabulary, 5);                 // a red circle blue square
  EXPECT_DOUBLE_EQ(scores.distinct_1, 5.0 / 9.0);  // 9 words
  EXPECT_DOUBLE_EQ(scores.distinct_2, 4.0 / 9.0);  // a red, red circle, a blue, blue square over 9 words
  ASSERT_TRUE(scores.novel.has_value());
  EXPECT_DOUBLE_EQ(*scores.novel, 1.0 / 3.0);  // only "a blue square" was never a training caption
  EXPECT_FALSE(scores.mbleu4.has_value());
  EXPECT_FALSE(caption_diversity(candidates, {}, nullptr).novel.has_value());
}

// Identical alternatives have BLEU-4 1 against each other; alternatives sharing only "a" have
// (1/4 * ~0 * ~0 * ~0)^(1/4) ~ 0; an image with one alternative is left out.
TEST(CaptionDiversity, MbleuAveragesEachAlternativeAgainstTheOthers) {
  const std::map<std::string, std::vector<ScoredCaption>> n_best = {
      {"1", {{"a big red circle", -1.0}, {"a big red circle", -2.0}}},
      {"2", {{"a big red circle", -1.0}, {"a small blue square", -2.0}}},
      {"3", {{"a big red circle", -1.0}}}};
  const DiversityScores scores = caption_diversity({{"1", "a big red circle"}}, n_best, nullptr);
  ASSERT_TRUE(scores.mbleu4.has_value());
  EXPECT_EQ(scores.n_best_images, 2);
  EXPECT_NEAR(*scores.mbleu4, 0.5, 1e-9);
}

}  // namespace
}  // namespace saccade
