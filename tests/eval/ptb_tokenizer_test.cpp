// PTB normalization: the token boundaries and removals coco-caption's PTBTokenizer step makes.
#include <gtest/gtest.h>

#include "eval/ptb_tokenizer.h"

namespace saccade {
namespace {

using Tokens = std::vector<std::string>;

TEST(PtbTokenize, LowerCasesAndDropsSentencePunctuation) {
  EXPECT_EQ(ptb_tokenize("A Dog runs on the grass."), (Tokens{"a", "dog", "runs", "on", "the", "grass"}));
  EXPECT_EQ(ptb_tokenize("Wait; what: no, really!"), (Tokens{"wait", "what", "no", "really"}));
}

TEST(PtbTokenize, SplitsCliticsLikeThePennTreebank) {
  EXPECT_EQ(
      ptb_tokenize("A man's umbrella isn't wet, they're sure I'd know we've it'll I'm"),
      (Tokens{
          "a", "man", "'s", "umbrella", "is", "n't", "wet", "they", "'re", "sure", "i", "'d", "know", "we",
          "'ve", "it", "'ll", "i", "'m"}));
  EXPECT_EQ(ptb_tokenize("can't won't"), (Tokens{"ca", "n't", "wo", "n't"}));
  EXPECT_EQ(ptb_tokenize("I cannot, we're gonna"), (Tokens{"i", "can", "not", "we", "'re", "gon", "na"}));
  // Already tokenized text keeps its clitics; a possessive plural's apostrophe is a quote and goes.
  EXPECT_EQ(ptb_tokenize("the dog 's bone"), (Tokens{"the", "dog", "'s", "bone"}));
  EXPECT_EQ(
      ptb_tokenize("the dogs' bowls at 5 o'clock"), (Tokens{"the", "dogs", "bowls", "at", "5", "o'clock"}));
}

TEST(PtbTokenize, BracketsBecomeTokensThatTheListDoesNotRemove) {
  // PUNCTUATIONS says -LRB- in upper case; the lower-cased output says -lrb-, so it stays.
  EXPECT_EQ(
      ptb_tokenize("A cat (black) [left] {right}"),
      (Tokens{"a", "cat", "-lrb-", "black", "-rrb-", "-lsb-", "left", "-rsb-", "-lcb-", "right", "-rcb-"}));
}

TEST(PtbTokenize, KeepsWordInnerPunctuation) {
  EXPECT_EQ(
      ptb_tokenize("Two black-and-white dogs; 1,000 sheep at 10:30 and 3.5 cats, a/b"),
      (Tokens{
          "two", "black-and-white", "dogs", "1,000", "sheep", "at", "10:30", "and", "3.5", "cats", "a/b"}));
  // Commas and colons only join digits; a period joins any word characters (PTB's WORD rule).
  EXPECT_EQ(ptb_tokenize("red,blue 1:a dog.the end"), (Tokens{"red", "blue", "1", "a", "dog.the", "end"}));
}

TEST(PtbTokenize, AbbreviationsAndAcronymsKeepTheirPeriod) {
  EXPECT_EQ(
      ptb_tokenize("Mr. Smith on St. Patrick's day with the U.S. team, e.g. there."),
      (Tokens{
          "mr.", "smith", "on", "st.", "patrick", "'s", "day", "with", "the", "u.s.", "team", "e.g.",
          "there"}));
  // A single letter is not an acronym: "c." is "c" and a sentence end.
  EXPECT_EQ(ptb_tokenize("vitamin C."), (Tokens{"vitamin", "c"}));
}

TEST(PtbTokenize, QuotesDashesAndEllipsesAreRemoved) {
  EXPECT_EQ(
      ptb_tokenize("He said \"hi\" -- and `left' - slowly..."),
      (Tokens{"he", "said", "hi", "and", "left", "slowly"}));
  // Runs of ? and ! are one token, and only the single marks are on the list.
  EXPECT_EQ(ptb_tokenize("Really?! Yes!"), (Tokens{"really", "?!", "yes"}));
  // Other symbols are tokens of their own.
  EXPECT_EQ(ptb_tokenize("$5 & 10%"), (Tokens{"$", "5", "&", "10", "%"}));
}

TEST(PtbTokenize, UnicodePunctuationActsLikeAscii) {
  // ’ “ ” — … and the no-break space, then Latin-1 capitals lower-cased (ÉTÉ -> été).
  EXPECT_EQ(
      ptb_tokenize("The dog\u2019s \u201cball\u201d \u2014 \u00c9T\u00c9\u2026\u00a0ok"),
      (Tokens{"the", "dog", "'s", "ball", "\u00e9t\u00e9", "ok"}));
  EXPECT_EQ(ptb_tokenize("caf\u00e9 \u00d7 2"), (Tokens{"caf\u00e9", "\u00d7", "2"}));
}

TEST(PtbTokenize, EmptyAndPunctuationOnlyCaptionsHaveNoTokens) {
  EXPECT_TRUE(ptb_tokenize("").empty());
  EXPECT_TRUE(ptb_tokenize(" . , ! ? ; : -- ... \"\" \t\n").empty());
}

}  // namespace
}  // namespace saccade
