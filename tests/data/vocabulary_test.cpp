// Vocabulary: tokenization, counts worked by hand, ids, encode/decode and JSON round trips.
#include "data/vocabulary.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "test_util.h"

namespace saccade::testing {
namespace {

using Words = std::vector<std::string>;

ImageRecord image_with(const std::vector<Words>& captions) {
  ImageRecord image;
  for (const auto& words : captions) image.captions.push_back({"", words});
  return image;
}

TEST(Tokenize, LowercasesAndDeletesPunctuationLikeNeuraltalk2) {
  EXPECT_EQ(tokenize("A Man's T-shirt, RED."), (Words{"a", "mans", "tshirt", "red"}));
  EXPECT_EQ(tokenize("  two\tspaces\n\nand   tabs  "), (Words{"two", "spaces", "and", "tabs"}));
  EXPECT_EQ(
      tokenize("\"quoted\" (paren) [x] {y} 3.5 50% @home #1"),
      (Words{"quoted", "paren", "x", "y", "35", "50", "home", "1"}));
  EXPECT_EQ(
      tokenize("caf\xC3\xA9 CAF\xC3\x89"), (Words{"caf\xC3\xA9", "caf\xC3\x89"}));  // non-ASCII kept as is
  EXPECT_EQ(tokenize("... !!! ,"), Words{});
  EXPECT_EQ(tokenize(""), Words{});
}

TEST(Vocabulary, SpecialTokensHaveFixedIds) {
  const Vocabulary vocab;
  EXPECT_EQ(vocab.size(), 4);
  EXPECT_EQ(vocab.word(Vocabulary::kPad), "<pad>");
  EXPECT_EQ(vocab.word(Vocabulary::kStart), "<start>");
  EXPECT_EQ(vocab.word(Vocabulary::kEnd), "<end>");
  EXPECT_EQ(vocab.word(Vocabulary::kUnk), "<unk>");
  EXPECT_EQ(Vocabulary::kPad, 0);
  EXPECT_EQ(vocab.id("anything"), Vocabulary::kUnk);
  EXPECT_THROW(vocab.word(4), std::invalid_argument);
  EXPECT_THROW(vocab.word(-1), std::invalid_argument);
}

TEST(Vocabulary, BuildKeepsWordsSeenAtLeastMinCountByDescendingCount) {
  // Counts by hand: a 4, dog 3, cat 2, on 2, the 1, mat 1.
  const std::vector<ImageRecord> images = {
      image_with({{"a", "dog"}, {"a", "cat", "on", "the", "mat"}}),
      image_with({{"a", "dog", "on"}, {"a", "dog", "cat"}}),
  };
  const Vocabulary two = build_vocabulary(images, 2);
  EXPECT_EQ(two.words(), (Words{"<pad>", "<start>", "<end>", "<unk>", "a", "dog", "cat", "on"}));
  const Vocabulary three = build_vocabulary(images, 3);
  EXPECT_EQ(three.words(), (Words{"<pad>", "<start>", "<end>", "<unk>", "a", "dog"}));
  const Vocabulary all = build_vocabulary(images, 1);
  EXPECT_EQ(all.size(), 4 + 6);
  EXPECT_EQ(all.word(8), "mat");  // ties at count 1 are alphabetical: mat, the
  EXPECT_EQ(all.word(9), "the");
}

TEST(Vocabulary, EncodeDecodeRoundTrip) {
  const Vocabulary vocab(Words{"a", "red", "circle"});
  EXPECT_EQ(vocab.encode({"a", "red", "circle"}), (std::vector<int64_t>{1, 4, 5, 6, 2}));
  EXPECT_EQ(vocab.encode({"a", "blue", "circle"}), (std::vector<int64_t>{1, 4, 3, 6, 2}));
  EXPECT_EQ(vocab.encode({}), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(vocab.decode(vocab.encode({"a", "red", "circle"})), (Words{"a", "red", "circle"}));
  EXPECT_EQ(vocab.decode({1, 4, 3, 6, 2, 5, 0}), (Words{"a", "<unk>", "circle"}));  // stops at <end>
  EXPECT_EQ(vocab.decode({4, 0, 0}), (Words{"a"}));                                 // pads skipped
  EXPECT_THROW(vocab.decode({1, 99}), std::invalid_argument);
}

TEST(Vocabulary, RejectsDuplicateEmptyAndSpecialWords) {
  EXPECT_THROW(Vocabulary(Words{"a", "a"}), std::invalid_argument);
  EXPECT_THROW(Vocabulary(Words{""}), std::invalid_argument);
  EXPECT_THROW(Vocabulary(Words{"<unk>"}), std::invalid_argument);
}

TEST(Vocabulary, RejectsAWordHoldingWhitespace) {
  for (const char* word : {"a b", "a\tb", "b\n"}) {
    try {
      Vocabulary(Words{"x", word});
      ADD_FAILURE() << "accepted '" << word << "'";
    } catch (const std::invalid_argument& error) {
      EXPECT_EQ(
          std::string(error.what()),
          "The vocabulary word '" + std::string(word) + "' (id 5) holds whitespace");
    }
  }
}

TEST(Vocabulary, SaveLoadRoundTrip) {
  TempDir dir;
  const Vocabulary vocab(Words{"a", "caf\xC3\xA9", "dog"});
  vocab.save(dir / "ckpt" / "vocab.json");
  const Vocabulary loaded = Vocabulary::load(dir / "ckpt" / "vocab.json");
  EXPECT_EQ(loaded, vocab);
  EXPECT_EQ(loaded.id("dog"), 6);
  EXPECT_THROW(Vocabulary::load(dir / "missing.json"), std::runtime_error);
}

TEST(Vocabulary, FromJsonNamesTheProblem) {
  auto message = [](const std::string& text) {
    try {
      Vocabulary::from_json(parse_json(text), "v.json");
    } catch (const std::invalid_argument& error) {
      return std::string(error.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(
      message(R"({"format": "x", "version": 1, "words": []})"), "v.json: not a version 1 saccade vocabulary");
  EXPECT_EQ(message(R"({"format": "saccade-vocabulary", "version": 1})"), "v.json: missing key \"words\"");
  EXPECT_EQ(
      message(
          R"({"format": "saccade-vocabulary", "version": 1, "words": ["<pad>", "<end>", "<start>", "<unk>"]})"),
      "v.json: id 1 must be <start>, got '<end>'");
  EXPECT_EQ(
      message(R"({"format": "saccade-vocabulary", "version": 1, "words": ["<pad>"]})"),
      "v.json: fewer words than the 4 special tokens");
  EXPECT_EQ(
      message(
          R"({"format": "saccade-vocabulary", "version": 1, "words": ["<pad>", "<start>", "<end>", "<unk>", 5]})"),
      "v.json: expected a string, got an integer");
}

TEST(Vocabulary, FitCaptionLengthTruncatesOrDrops) {
  VocabularyOptions options;
  options.max_caption_length = 3;
  Words words = {"a", "b", "c", "d"};
  EXPECT_TRUE(fit_caption_length(words, options));
  EXPECT_EQ(words, (Words{"a", "b", "c"}));
  options.on_long_caption = LongCaptionPolicy::drop;
  words = {"a", "b", "c", "d"};
  EXPECT_FALSE(fit_caption_length(words, options));
  words = {"a", "b", "c"};
  EXPECT_TRUE(fit_caption_length(words, options));  // exactly the limit is kept
  options.max_caption_length = 0;                   // no limit
  words = Words(100, "w");
  EXPECT_TRUE(fit_caption_length(words, options));
  EXPECT_EQ(words.size(), 100u);
}

TEST(Vocabulary, OptionsValidateAndPolicyNames) {
  VocabularyOptions options;
  options.min_word_count = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options.min_word_count = 1;
  options.max_caption_length = -1;
  EXPECT_THROW(validate(options), std::invalid_argument);
  EXPECT_EQ(parse_long_caption_policy("drop"), LongCaptionPolicy::drop);
  EXPECT_EQ(to_string(LongCaptionPolicy::truncate), "truncate");
  EXPECT_THROW(parse_long_caption_policy("cut"), std::invalid_argument);
}

}  // namespace
}  // namespace saccade::testing
