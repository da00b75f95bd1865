// BLEU, ROUGE-L and CIDEr-D against values worked out by hand from the definitions in
// coco-caption (the working is in the comments), and against numbers its scorer printed.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <sstream>
#include <utility>
#include <vector>

#include "eval/metrics.h"

namespace saccade {
namespace {

Tokens words(const std::string& text) {
  Tokens tokens;
  std::istringstream in(text);
  for (std::string word; in >> word;) tokens.push_back(word);
  return tokens;
}

ImageTokens image(const std::string& candidate, const std::vector<std::string>& references) {
  ImageTokens result{words(candidate), {}};
  for (const auto& reference : references) result.references.push_back(words(reference));
  return result;
}

TEST(CountNgrams, CountsEveryOrderUpToFour) {
  const NgramCounts counts = count_ngrams(words("a b a b a"));
  EXPECT_EQ(counts[0].at("a"), 3);
  EXPECT_EQ(counts[0].at("b"), 2);
  EXPECT_EQ(counts[1].at("a b"), 2);
  EXPECT_EQ(counts[1].at("b a"), 2);
  EXPECT_EQ(counts[2].at("a b a"), 2);
  EXPECT_EQ(counts[3].size(), 2u);  // "a b a b", "b a b a"
  EXPECT_TRUE(count_ngrams({}).at(0).empty());
}

// Candidate "the the the cat" (c = 4) against "the cat sat" (3) and "a cat on the mat" (5).
//   Closest reference length: |3 - 4| = |5 - 4| = 1, a tie, which goes to the shorter: r = 3,
//   so c >= r and there is no brevity penalty (with r = 5 it would be exp(1 - 5/4)).
//   1-grams: the x3 clipped to 1 (at most once in any one reference), cat x1 -> 2 of 4.
//   2-grams: "the the" x2 -> 0, "the cat" -> 1                             -> 1 of 3.
//   3-grams: "the the the", "the the cat"                                  -> 0 of 2.
//   4-grams: "the the the cat"                                             -> 0 of 1.
//   BLEU-1 = 2/4 = 0.5, BLEU-2 = (2/4 * 1/3)^(1/2) = 0.408248...,
//   BLEU-3 = (1/6 * (0 + 1e-15)/2)^(1/3) = 4.3679e-6: the tiny constant keeps it off 0.
TEST(Bleu, ClipsCountsAndBreaksLengthTiesTowardTheShorterReference) {
  const BleuScores scores = bleu({image("the the the cat", {"the cat sat", "a cat on the mat"})});
  EXPECT_EQ(scores.candidate_length, 4);
  EXPECT_EQ(scores.reference_length, 3);
  EXPECT_EQ(scores.guess, (std::array<int, 4>{4, 3, 2, 1}));
  EXPECT_EQ(scores.correct, (std::array<int, 4>{2, 1, 0, 0}));
  EXPECT_NEAR(scores.corpus[0], 0.5, 1e-9);
  EXPECT_NEAR(scores.corpus[1], std::sqrt(1.0 / 6.0), 1e-9);
  EXPECT_NEAR(scores.corpus[2], std::cbrt(1.0 / 6.0 * 0.5e-15), 1e-12);
  EXPECT_NEAR(scores.corpus[3], std::pow(1.0 / 6.0 * 0.5e-15 * 1e-15, 0.25), 1e-15);
  EXPECT_EQ(scores.per_image.size(), 1u);
  EXPECT_NEAR(scores.per_image[0][1], std::sqrt(1.0 / 6.0), 1e-9);
}

// Two images; the corpus score sums counts before dividing.
//   A: "a dog" (c = 2) vs "a dog runs" (3), "a big dog runs fast" (5): r = 3.
//      1-grams 2/2, 2-grams 1/1, 3- and 4-grams 0/0.
//   B: "a cat sleeps" (c = 3) vs "a cat sleeps": r = 3. 1-grams 3/3, 2-grams 2/2, 3-grams 1/1,
//      4-grams 0/0.
//   Corpus: c = 5, r = 6 -> BP = exp(1 - 6/5) = exp(-0.2) = 0.818731. Precisions 5/5, 3/3, 1/1,
//   and 0/0, which the constants turn into (0 + 1e-15) / (0 + 1e-9) = 1e-6 rather than an error:
//   BLEU-1..3 = 0.818731, BLEU-4 = (1e-6)^(1/4) * 0.818731 = 0.0258905.
//   Per image, A: BP = exp(1 - 3/2) = 0.606531; BLEU-3 = (1e-6)^(1/3) * BP = 0.00606531,
//   BLEU-4 = (1e-12)^(1/4) * BP; B: no penalty, BLEU-4 = (1e-6)^(1/4) = 0.0316228.
TEST(Bleu, SumsCountsOverImagesAndAppliesTheBrevityPenaltyOnce) {
  const BleuScores scores =
      bleu({image("a dog", {"a dog runs", "a big dog runs fast"}), image("a cat sleeps", {"a cat sleeps"})});
  EXPECT_EQ(scores.candidate_length, 5);
  EXPECT_EQ(scores.reference_length, 6);
  EXPECT_EQ(scores.guess, (std::array<int, 4>{5, 3, 1, 0}));
  EXPECT_EQ(scores.correct, (std::array<int, 4>{5, 3, 1, 0}));
  const double penalty = std::exp(-0.2);
  EXPECT_NEAR(scores.corpus[0], penalty, 1e-8);
  EXPECT_NEAR(scores.corpus[2], penalty, 1e-8);
  EXPECT_NEAR(scores.corpus[3], std::pow(1e-6, 0.25) * penalty, 1e-9);

  const double penalty_a = std::exp(-0.5);
  EXPECT_NEAR(scores.per_image[0][0], penalty_a, 1e-8);
  EXPECT_NEAR(scores.per_image[0][2], 0.01 * penalty_a, 1e-10);
  EXPECT_NEAR(scores.per_image[0][3], 1e-3 * penalty_a, 1e-11);
  EXPECT_NEAR(scores.per_image[1][0], 1.0, 1e-8);
  EXPECT_NEAR(scores.per_image[1][3], std::pow(1e-6, 0.25), 1e-9);
}

TEST(Bleu, EmptyCandidateScoresZero) {
  // c = 0 < r: ratio = 1e-15 / (3 + 1e-9), so BP = exp(1 - 3e15) = 0.
  const BleuScores scores = bleu({image("", {"a b c"})});
  for (double value : scores.per_image[0]) EXPECT_EQ(value, 0.0);
  for (double value : scores.corpus) EXPECT_EQ(value, 0.0);
}

TEST(Bleu, ImageWithoutReferencesIsAnError) {
  EXPECT_THROW(bleu({image("a b", {})}), std::invalid_argument);
}

TEST(LcsLength, MatchesTheTextbookExample) {
  // CLRS 15.4: LCS(ABCBDAB, BDCABA) = 4 ("BCBA").
  EXPECT_EQ(lcs_length(words("a b c b d a b"), words("b d c a b a")), 4u);
  EXPECT_EQ(lcs_length(words("b d c a b a"), words("a b c b d a b")), 4u);
  EXPECT_EQ(lcs_length({}, words("a b")), 0u);
}

// Candidate "a man riding a horse" (5):
//   vs "a man is riding a brown horse" (7): LCS 5 -> P = 5/5 = 1, R = 5/7
//   vs "the horse" (2):                      LCS 1 -> P = 1/5,     R = 1/2
//   P* = 1, R* = 5/7: F = (1 + 1.44) * 1 * 5/7 / (5/7 + 1.44 * 1) = 12.2 / 15.08 = 0.809019
TEST(RougeL, UsesBetaOnePointTwo) {
  EXPECT_NEAR(
      rouge_l(words("a man riding a horse"), {words("a man is riding a brown horse"), words("the horse")}),
      12.2 / 15.08, 1e-12);
}

// Candidate "a horse" (2): vs the long reference LCS 2 -> P = 1, R = 2/7; vs "the horse" LCS 1 ->
// P = 1/2, R = 1/2. The maxima are taken separately, P* = 1 and R* = 1/2 from different
// references: F = 2.44 * 0.5 / (0.5 + 1.44) = 0.628866 (the best single reference gives 0.5).
TEST(RougeL, TakesPrecisionAndRecallMaximaSeparately) {
  EXPECT_NEAR(
      rouge_l(words("a horse"), {words("a man is riding a brown horse"), words("the horse")}), 1.22 / 1.94,
      1e-12);
}

TEST(RougeL, EmptyCandidateScoresZero) {
  EXPECT_EQ(rouge_l({}, {words("a b"), words("c")}), 0.0);
  // coco-caption splits "" on ' ' into one empty token, which matches an empty reference.
  EXPECT_EQ(rouge_l({}, {{}}), 1.0);
}

// Three images, log N = ln 3. Document frequencies over the references: "a" in all three
// (weight ln 3 - ln 3 = 0); "dog", "cat", "bird", "a dog", "a cat", "a bird" in one each
// (weight ln 3); the candidate's "the" and "the bird" in none (df clamped to 1: weight ln 3).
//   Images 1 and 2 repeat their reference: orders 1 and 2 have cosine 1, orders 3 and 4 have no
//   n-grams (norm 0, similarity 0), equal lengths: 10 * (1 + 1 + 0 + 0) / 4 = 5.
//   Image 3, "the bird" vs "a bird": order 1 vectors (the: ln3, bird: ln3) and (a: 0, bird: ln3):
//   ln3^2 / (sqrt(2) ln3 * ln3) = 1/sqrt(2); order 2 shares nothing:
//   10 * (0.707107 + 0 + 0 + 0) / 4 = 1.767767.
TEST(CiderD, WeightsNgramsByDocumentFrequencyOverTheSet) {
  const std::vector<double> scores =
      cider_d({image("a dog", {"a dog"}), image("a cat", {"a cat"}), image("the bird", {"a bird"})});
  ASSERT_EQ(scores.size(), 3u);
  EXPECT_NEAR(scores[0], 5.0, 1e-12);
  EXPECT_NEAR(scores[1], 5.0, 1e-12);
  EXPECT_NEAR(scores[2], 10.0 / 4.0 / std::sqrt(2.0), 1e-12);
}

// Two images, log N = ln 2; "dog" and "cat" each in one image's references: weight ln 2.
//   Image 1, "dog dog dog" vs "dog": order 1 candidate (dog: 3 ln2), reference (dog: ln2).
//   Clipping: min(3 ln2, ln2) * ln2 / (3 ln2 * ln2) = 1/3 (1 without clipping). Orders 2-3: the
//   reference has none (norm 0): 0. Lengths in bigrams: 2 vs 0, penalty exp(-2^2 / (2 * 6^2)) =
//   exp(-1/18). Score = 10 * (1/3 * exp(-1/18)) / 4 = 0.788300.
//   Image 2, "cat" vs "cat": 10 * 1 / 4 = 2.5.
TEST(CiderD, ClipsCandidateWeightsAndPenalizesLengthDifference) {
  const std::vector<double> scores = cider_d({image("dog dog dog", {"dog"}), image("cat", {"cat"})});
  EXPECT_NEAR(scores[0], 10.0 / 12.0 * std::exp(-1.0 / 18.0), 1e-12);
  EXPECT_NEAR(scores[1], 2.5, 1e-12);
}

TEST(CiderD, AveragesOverReferencesAndScoresEmptyCandidatesZero) {
  // Image 1 against two references: "x y" matches one (orders 1 and 2: 1) and shares nothing
  // with the other, so 10 * (1 + 1) / 4 / 2 = 2.5. Image 2's candidate is empty: 0, not NaN.
  const std::vector<double> scores = cider_d({image("x y", {"x y", "p q"}), image("", {"z"})});
  EXPECT_NEAR(scores[0], 2.5, 1e-12);
  EXPECT_EQ(scores[1], 0.0);
}

TEST(CiderD, SingleImageScoresZero) {
  // log N = log 1 = 0 and every reference n-gram has df 1: all weights are 0.
  EXPECT_EQ(cider_d({image("a b", {"a b"})}).at(0), 0.0);
}

// Published: Maluuba/nlg-eval tests/test_nlgeval.py runs coco-caption's Bleu, Rouge and Cider on
// these lower-case, punctuation-free captions and asserts these values to 5 places.
TEST(PublishedValues, NlgEvalTwoImageExample) {
  const std::vector<ImageTokens> images = {
      image(
          "this is the model generated sentence1 which seems good enough",
          {"this is one reference sentence for sentence1",
           "this is one more reference sentence for sentence1"}),
      image(
          "this is sentence2 which has been generated by your model",
          {"this is a reference sentence for sentence2 which was generated by your model",
           "this is the second reference sentence for sentence2"}),
  };
  const BleuScores b = bleu(images);
  EXPECT_NEAR(b.corpus[0], 0.55, 5e-6);
  EXPECT_NEAR(b.corpus[1], 0.428174, 5e-6);
  EXPECT_NEAR(b.corpus[2], 0.284043, 5e-6);
  EXPECT_NEAR(b.corpus[3], 0.201143, 5e-6);
  const double rouge = (rouge_l(images[0].candidate, images[0].references) +
                        rouge_l(images[1].candidate, images[1].references)) /
                       2;
  EXPECT_NEAR(rouge, 0.522104, 5e-6);
  const std::vector<double> cider = cider_d(images);
  EXPECT_NEAR((cider[0] + cider[1]) / 2, 1.242192, 5e-6);
}

TEST(PublishedValues, NlgEvalSingleSentenceExample) {
  // Worked: c = 5, closest r = 5; precisions 4/5, 2/4, 1/3, 0/2 -> BLEU-4 = (0.8 * 0.5 / 3 *
  // 0.5e-15)^(1/4) = 9.036e-5. ROUGE-L: P* = 4/5, R* = 4/4 -> 2.44 * 0.8 / (1 + 1.152) = 0.907063.
  const std::vector<ImageTokens> images = {
      image("this is a good test", {"this is a test", "this is also a test"})};
  const BleuScores b = bleu(images);
  EXPECT_NEAR(b.corpus[0], 0.799999, 5e-6);
  EXPECT_NEAR(b.corpus[1], 0.632455, 5e-6);
  EXPECT_NEAR(b.corpus[2], 0.5108729, 5e-6);
  EXPECT_NEAR(b.corpus[3], 0.0000903602, 5e-6);
  EXPECT_NEAR(rouge_l(images[0].candidate, images[0].references), 0.9070631, 5e-6);
  EXPECT_NEAR(cider_d(images).at(0), 0.0, 5e-6);
}

TEST(PublishedValues, NlgEvalNonAsciiExample) {
  // Whitespace tokens as given: "Test" and "test" differ, "français." keeps its period.
  const std::vector<ImageTokens> images = {
      image("Le test est en fran\u00e7ais.", {"Test en fran\u00e7ais.", "Le test en fran\u00e7ais."})};
  const BleuScores b = bleu(images);
  EXPECT_NEAR(b.corpus[0], 0.799999, 5e-6);
  EXPECT_NEAR(b.corpus[1], 0.632455, 5e-6);
  EXPECT_NEAR(b.corpus[2], 0.0000051, 5e-6);
  EXPECT_NEAR(b.corpus[3], 0.0, 5e-6);
  EXPECT_NEAR(rouge_l(images[0].candidate, images[0].references), 0.9070631, 5e-6);
}

// A fixed corpus sets the document frequencies, whatever is scored: with N = 2 images and every
// n-gram of "a b" in one of them, orders 1 and 2 match exactly (sim 1), orders 3 and 4 are empty
// (sim 0): 10 * (1 + 1 + 0 + 0) / 4 = 5. Scored as a set of its own (N = 1), idf is 0 everywhere.
TEST(CiderDScorer, DocumentFrequenciesComeFromItsCorpus) {
  const CiderD scorer({{{"a", "b"}}, {{"c"}}});
  EXPECT_EQ(scorer.images(), 2);
  const std::vector<double> scores = scorer.score({{"a", "b"}, {"c"}, {}}, {{"a", "b"}});
  EXPECT_NEAR(scores.at(0), 5.0, 1e-12);
  EXPECT_EQ(scores.at(1), 0.0);
  EXPECT_EQ(scores.at(2), 0.0);
  EXPECT_EQ(cider_d({image("a b", {"a b"})}).at(0), 0.0);
  EXPECT_THROW(CiderD({}), std::invalid_argument);
  EXPECT_THROW(scorer.score({{"a"}}, {}), std::invalid_argument);
}

// np.mean's values (numpy 1.24, `np.mean(np.array(values))`, printed with repr) over values of
// seven magnitudes, where adding in order differs in the last bit for 128, 300 and 1000 values.
TEST(NumpyMean, SumsPairwiseAsNumpyDoes) {
  const std::array<double, 7> scales = {0.001, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0};
  const auto values = [&](int count) {
    std::vector<double> out;
    for (int i = 1; i <= count; ++i) out.push_back(std::fmod(i * 0.7548776662466927, 1.0) * scales[i % 7]);
    return out;
  };
  const auto in_order = [](const std::vector<double>& v) {
    double sum = 0.0;
    for (const double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  const std::vector<std::pair<int, double>> numpy = {
      {5, 15.591419416373196},  {9, 67.47812875762304},   {128, 77.66078866084763}, {129, 77.06170672507224},
      {300, 78.58886609897091}, {1000, 79.4570009975212}, {5000, 79.33759421818345}};
  for (const auto& [count, expected] : numpy) {
    SCOPED_TRACE(count);
    EXPECT_EQ(numpy_mean(values(count)), expected);
  }
  EXPECT_NE(in_order(values(128)), 77.66078866084763);
  EXPECT_NE(in_order(values(300)), 78.58886609897091);
  EXPECT_NE(in_order(values(1000)), 79.4570009975212);
}

}  // namespace
}  // namespace saccade
