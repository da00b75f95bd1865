// score_captions end to end on raw text: normalization, empty captions, id checks, METEOR's
// unavailable path and its -stdio protocol (against a stand-in for the jar), config reading.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "eval/caption_agreement.h"
#include "eval/caption_scores.h"
#include "test_util.h"

namespace saccade {
namespace {

using References = std::map<std::string, std::vector<std::string>>;
using Candidates = std::map<std::string, std::string>;

TEST(ScoreCaptions, NormalizesBothSidesBeforeScoring) {
  // Published: irisml-tasks-training test_evaluate_captioning.py expects coco-caption's BLEU-1..4
  // = 1 and CIDEr = 10 here; it takes case-normalizing tokenization to get there.
  const References references = {
      {"1", {"Hello World good Bye"}}, {"2", {"This is perfect test", "This is perfect test"}}};
  const CaptionScores scores =
      score_captions(references, {{"1", "Hello World Good bye"}, {"2", "This is perfect test."}}, {});
  for (double value : scores.bleu) EXPECT_NEAR(value, 1.0, 1e-7);
  EXPECT_NEAR(scores.cider_d, 10.0, 1e-7);
  EXPECT_NEAR(scores.rouge_l, 1.0, 1e-12);
  ASSERT_EQ(scores.images.size(), 2u);
  EXPECT_EQ(scores.images[0].image_id, "1");
  EXPECT_NEAR(scores.images[1].cider_d, 10.0, 1e-7);

  const CaptionScores wrong =
      score_captions(references, {{"1", "How are you today"}, {"2", "Only wrong words here"}}, {});
  for (double value : wrong.bleu) EXPECT_NEAR(value, 0.0, 1e-7);
  EXPECT_NEAR(wrong.cider_d, 0.0, 1e-7);
}

// Two captionings compared on the published example above: the same text counts as identical
// (image 1), the same words in other text do not (image 2, its period), and the other captions
// are scored as score_captions scores them: BLEU 1 and CIDEr 10 for the perfect ones, 0 for
// captions of wrong words.
TEST(CompareCaptions, CountsIdenticalCaptionsAndScoresTheOtherSet) {
  const References references = {
      {"1", {"Hello World good Bye"}}, {"2", {"This is perfect test", "This is perfect test"}}};
  const Candidates captions = {{"1", "Hello World Good bye"}, {"2", "This is perfect test."}};
  const CaptionScores scores = score_captions(references, captions, {});
  const auto same_words = compare_captions(
      references, captions, scores, {{"1", "Hello World Good bye"}, {"2", "This is perfect test"}}, "a.json",
      {});
  EXPECT_EQ(same_words.images, 2);
  EXPECT_EQ(same_words.identical, 1);
  for (double value : same_words.against.bleu) EXPECT_NEAR(value, 1.0, 1e-7);
  EXPECT_NEAR(same_words.against.cider_d, 10.0, 1e-7);
  const std::string table = describe(same_words);
  EXPECT_NE(table.find("identical captions  1 of 2 (50.0%)\n"), std::string::npos) << table;
  EXPECT_NE(table.find("CIDEr-D  10.000000   10.000000   +0.000000\n"), std::string::npos) << table;
  EXPECT_NE(table.find("METEOR   unavailable\n"), std::string::npos) << table;

  const auto wrong = compare_captions(
      references, captions, scores, {{"1", "How are you today"}, {"2", "Only wrong words here"}}, "b.json",
      {});
  EXPECT_EQ(wrong.identical, 0);
  EXPECT_NEAR(wrong.against.cider_d, 0.0, 1e-7);
  EXPECT_NE(describe(wrong).find("CIDEr-D  10.000000   0.000000    +10.000000\n"), std::string::npos)
      << describe(wrong);

  try {
    compare_captions(references, captions, scores, {{"1", "x"}, {"3", "y"}}, "c.json", {});
    ADD_FAILURE() << "captions of other images were compared";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(
        error.what(),
        "c.json does not caption the same 2 images: 1 (e.g. 2) have no caption there, and 1 (e.g. 3) are not "
        "compared");
  }
}

TEST(ScoreCaptions, WithoutNormalizationSplitsOnWhitespaceOnly) {
  ScoreOptions options;
  options.normalize = false;
  // "Dog." and "dog" differ as given: no unigram matches, BLEU-1 = ~0; normalized they match.
  EXPECT_NEAR(score_captions({{"1", {"dog"}}}, {{"1", "Dog."}}, options).bleu[0], 0.0, 1e-9);
  EXPECT_NEAR(score_captions({{"1", {"dog"}}}, {{"1", "Dog."}}, {}).bleu[0], 1.0, 1e-8);
}

TEST(ScoreCaptions, RougeLKeepsATokenSpacedWithANoBreakSpaceWhichBleuSplits) {
  // The tokenizer makes "3 1/2" one token. ROUGE-L (rouge.py splits at ' ') sees a, 3 1/2, x
  // against a, 3 1/2, y: LCS 2 of 3, 2/3 (not 3/4). BLEU-1 (str.split()) sees four words each:
  // 3 of 4 match, 3/4 (not 2/3).
  const CaptionScores scores = score_captions({{"1", {"a 3 1/2 y"}}}, {{"1", "a 3 1/2 x"}}, {});
  EXPECT_NEAR(scores.rouge_l, 2.0 / 3.0, 1e-12);
  EXPECT_NEAR(scores.bleu[0], 0.75, 1e-9);
}

TEST(ScoreCaptions, AReferenceIsLexedBeforeTheNextAsInCocoCaptionsFile) {
  // "letter B." followed by a reference starting "A" loses its period, so the candidate matches
  // the first reference word for word: BLEU-4 and ROUGE-L 1 (with "b." kept, BLEU-1 is 5/6).
  const CaptionScores scores = score_captions(
      {{"1", {"A sign with the letter B.", "A red sign on a pole."}}}, {{"1", "a sign with the letter b"}},
      {});
  EXPECT_NEAR(scores.bleu[3], 1.0, 1e-8);
  EXPECT_NEAR(scores.rouge_l, 1.0, 1e-12);
}

// The file's image order decides which caption follows which: image 2's "letter B." loses its
// period before image 10's "A dog ..." (coco-caption's order), and keeps it as "b." when the
// image is last (id order, "10" before "2"), where it does not match the candidate's "b".
// coco-caption gives BLEU-4 1 and CIDEr-D 10 in the file's order.
TEST(ScoreCaptions, TheFilesImageOrderDecidesWhatFollowsACaption) {
  const std::map<std::string, std::vector<std::string>> references = {
      {"2", {"A sign with the letter B."}}, {"10", {"A dog on a bed."}}};
  const std::map<std::string, std::string> candidates = {
      {"2", "a sign with the letter b"}, {"10", "a dog on a bed"}};
  const CaptionScores in_file_order = score_captions(references, candidates, {}, {"2", "10"});
  EXPECT_NEAR(in_file_order.bleu[3], 1.0, 1e-8);
  EXPECT_NEAR(in_file_order.cider_d, 10.0, 1e-8);
  EXPECT_EQ(in_file_order.images[0].image_id, "10");  // per image in id order either way
  const CaptionScores in_id_order = score_captions(references, candidates, {});
  EXPECT_LT(in_id_order.bleu[0], 0.95);
  EXPECT_LT(in_id_order.images[1].rouge_l, 1.0);
}

TEST(ScoreCaptions, EmptyCandidatesScoreZeroAndAreCounted) {
  const CaptionScores scores = score_captions(
      {{"1", {"a dog runs"}}, {"2", {"a cat sleeps"}}}, {{"1", "a dog runs"}, {"2", " . "}}, {});
  EXPECT_EQ(scores.empty_candidates, 1u);
  const ImageScores& empty = scores.images[1];
  for (double value : empty.bleu) EXPECT_EQ(value, 0.0);
  EXPECT_EQ(empty.rouge_l, 0.0);
  EXPECT_EQ(empty.cider_d, 0.0);
  EXPECT_NEAR(scores.rouge_l, 0.5, 1e-12);  // mean of 1 and 0
}

void expect_invalid(const References& references, const Candidates& candidates, const std::string& message) {
  try {
    score_captions(references, candidates, {});
    FAIL() << "expected std::invalid_argument: " << message;
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(std::string(error.what()), message);
  }
}

TEST(ScoreCaptions, RejectsMismatchedOrEmptySets) {
  expect_invalid({{"1", {"a"}}}, {{"1", "a"}, {"2", "b"}}, "Image '2' has a candidate but no references");
  expect_invalid({{"1", {"a"}}, {"7", {"b"}}}, {{"1", "a"}}, "Image '7' has references but no candidate");
  expect_invalid({{"1", {}}}, {{"1", "a"}}, "Image '1' has no reference caption");
  expect_invalid({}, {}, "There are no captions to score");
}

TEST(ScoreCaptions, MeteorIsUnavailableWithoutAJar) {
  const CaptionScores scores = score_captions({{"1", {"a dog"}}}, {{"1", "a dog"}}, {});
  EXPECT_FALSE(scores.meteor.has_value());
  EXPECT_EQ(scores.meteor_unavailable, "eval.meteor_jar is not set");
  EXPECT_FALSE(scores.images[0].meteor.has_value());
}

TEST(ScoreOptionsFrom, ReadsTheMeteorJar) {
  EXPECT_EQ(score_options_from(Config(YAML::Load("eval: {meteor_jar: null}"))).meteor.jar, "");
  EXPECT_EQ(
      score_options_from(Config(YAML::Load("eval: {meteor_jar: /opt/m.jar}"))).meteor.jar, "/opt/m.jar");
}

class MeteorTest : public ::testing::Test {
 protected:
  // A stand-in for `java -Xmx2G -jar meteor-1.5.jar - - -stdio -l en -norm`: it checks its
  // arguments and working folder, answers "SCORE ||| refs ||| candidate" with the candidate's
  // word count as the statistics, and "EVAL ||| s1 ||| s2 ..." with each statistic as that image's
  // score and their sum as the corpus score.
  std::string fake_java(const std::string& body) {
    const auto path = dir_ / "java";
    testing::write_file(path, "#!/bin/sh\n" + body);
    std::filesystem::permissions(path, std::filesystem::perms::owner_all);
    return path.string();
  }

  MeteorOptions options(const std::string& java) {
    testing::write_file(jar_, "not really a jar");
    return MeteorOptions{jar_.string(), java};
  }

  testing::TempDir dir_;
  std::filesystem::path jar_ = dir_ / "meteor" / "meteor-1.5.jar";
};

// The stand-in's script, answering each SCORE line with `score_answer` (a shell command that
// reads $line).
std::string fake_meteor(const std::string& score_answer) {
  const std::string before = R"sh(
[ "$1 $2 $4 $5 $6 $7 $8 $9" = "-Xmx2G -jar - - -stdio -l en -norm" ] || exit 3
[ "$(pwd)" = "$(dirname "$3")" ] || exit 4
while IFS= read -r line; do
  case "$line" in
    SCORE*) )sh";
  const std::string after = R"sh( ;;
    EVAL*) stats=$(printf '%s\n' "${line#EVAL ||| }" | sed 's/ ||| /\n/g')
           printf '%s\n' "$stats"
           echo $(( $(printf '%s\n' "$stats" | paste -sd+ -) )) ;;
  esac
done
)sh";
  return before + score_answer + after;
}

const std::string kFakeMeteor = fake_meteor("set -f; set -- ${line##*'||| '}; echo $#");

TEST_F(MeteorTest, SpeaksTheStdioProtocol) {
  const std::vector<ImageTokens> images = {
      {{"a", "dog", "runs"}, {{"a", "dog"}, {"the", "dog", "runs"}}},
      // The protocol's separator is dropped from a caption, and the double space it leaves.
      {{"a", "|||", "cat"}, {{"a", "cat"}}},
  };
  const MeteorScores scores = meteor(images, options(fake_java(kFakeMeteor)));
  ASSERT_TRUE(scores.available);
  EXPECT_EQ(scores.per_image, (std::vector<double>{3, 2}));
  EXPECT_EQ(scores.corpus, 5);
}

TEST_F(MeteorTest, OnlyTheCandidateLosesTheSeparator) {
  // As meteor.py: a "|||" in a reference goes to the jar, which reads two references (3
  // separators in the line); the candidate's is dropped.
  const std::vector<ImageTokens> images = {{{"a", "|||", "cat"}, {{"a", "|||", "cat"}}}};
  const auto count_separators = "printf '%s\\n' \"$line\" | grep -o '|||' | wc -l";
  const MeteorScores scores = meteor(images, options(fake_java(fake_meteor(count_separators))));
  ASSERT_TRUE(scores.available);
  EXPECT_EQ(scores.per_image, (std::vector<double>{3}));
}

TEST_F(MeteorTest, ScoreCaptionsSendsTheTokenizersTokens) {
  // As coco-caption sends them: "3 1/2" one word, spaced with U+00A0 (the stand-in counts words
  // at ASCII spaces: 3, not 4).
  ScoreOptions score_options;
  score_options.meteor = options(fake_java(kFakeMeteor));
  const CaptionScores scores = score_captions({{"1", {"a 3 1/2 y"}}}, {{"1", "a 3 1/2 x"}}, score_options);
  EXPECT_EQ(scores.meteor, 3.0);
}

TEST_F(MeteorTest, UnavailableWithoutJava) {
  const MeteorScores scores = meteor({}, options((dir_ / "no-java-here").string()));
  EXPECT_FALSE(scores.available);
  EXPECT_NE(scores.unavailable_reason.find("was not found (METEOR needs Java)"), std::string::npos);
}

TEST_F(MeteorTest, MissingJarIsAConfigError) {
  MeteorOptions missing{(dir_ / "nowhere.jar").string(), fake_java(kFakeMeteor)};
  EXPECT_THROW(meteor({}, missing), std::invalid_argument);
}

TEST_F(MeteorTest, AJarThatDiesIsAnError) {
  const std::vector<ImageTokens> images = {{{"a"}, {{"a"}}}};
  try {
    meteor(images, options(fake_java("exit 1\n")));
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("stopped answering"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace saccade
