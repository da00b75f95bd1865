// PTB normalization: the token boundaries and removals coco-caption's PTBTokenizer step makes.
// Expectations are worked from CoreNLP 3.4.1's PTBLexer.flex; each comment names the rule.
#include <gtest/gtest.h>

#include "eval/ptb/tokenizer.h"

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
  // ABBREV2 through ACRO: a single letter keeps its period too, unless the next line starts with
  // one of ACRONYM's sentence starters ("A", "The", ...), which a lone caption's does not.
  EXPECT_EQ(ptb_tokenize("vitamin C."), (Tokens{"vitamin", "c."}));
}

TEST(PtbTokenize, CaptionsInAListSeeTheLineAfterThem) {
  // "B." before a line starting "A" is the letter and a sentence's period; "fig." before a digit
  // keeps its period, and loses it before a word. The last caption sees the end of the text.
  EXPECT_EQ(
      ptb_tokenize_captions({"A sign with the letter B.", "A red fig.", "3 figs and vitamin C.", "", "fig."}),
      (std::vector<Tokens>{
          {"a", "sign", "with", "the", "letter", "b"},
          {"a", "red", "fig."},
          {"3", "figs", "and", "vitamin", "c."},
          {},
          {"fig"}}));
  EXPECT_TRUE(ptb_tokenize_captions({}).empty());
}

// An SGML tag's quoted attribute may hold the line break between two captions: PTBTokenizer
// writes that tag as one token with the break inside, and ptbtokenizer.py's split('\n') gives its
// rest to the next caption (the tag's spaces are U+00A0, which ' ' does not split).
TEST(PtbTokenize, ATagRunningOverALineBreakIsCutThere) {
  EXPECT_EQ(
      ptb_tokenize_captions({"<a b='x", "y'> dog", "a cat"}),
      (std::vector<Tokens>{{"<a\u00a0b='x"}, {"y'>", "dog"}, {"a", "cat"}}));
  // Closed on its own line, the tag is the line's own token and the next line is untouched.
  EXPECT_EQ(
      ptb_tokenize_captions({"<a b='x'>", "y dog"}), (std::vector<Tokens>{{"<a\u00a0b='x'>"}, {"y", "dog"}}));
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

TEST(PtbTokenize, SgmlTagsStayOneToken) {
  // SGML: a tag is one token ("<unk>" is not "<" "unk" ">").
  EXPECT_EQ(ptb_tokenize("a <unk> dog"), (Tokens{"a", "<unk>", "dog"}));
  EXPECT_EQ(ptb_tokenize("<br/> </p> <!DOCTYPE html>"), (Tokens{"<br/>", "</p>", "<!doctype\u00a0html>"}));
  // SGML with normalizeSpace: the space inside becomes U+00A0, still one token (BLEU and CIDEr-D
  // cut it: split_at_python_whitespace).
  EXPECT_EQ(ptb_tokenize("<a href='x'>"), (Tokens{"<a\u00a0href='x'>"}));
  // No letter after '<': LESSTHAN, then NUMBER.
  EXPECT_EQ(ptb_tokenize("<3"), (Tokens{"<", "3"}));
}

TEST(PtbTokenize, HtmlEntitiesAndAmpersands) {
  // SPAMP -> "&"; THINGA (capitals only) keeps "AT&T" whole; lower case "at&t" is three tokens.
  EXPECT_EQ(ptb_tokenize("&amp; AT&T at&t"), (Tokens{"&", "at&t", "at", "&", "t"}));
  EXPECT_EQ(ptb_tokenize("AT&amp;T"), (Tokens{"at&t"}));
  // DBLQUOT: &quot; is a quote (`` before a letter, '' otherwise), both removed.
  EXPECT_EQ(ptb_tokenize("&quot;hi&quot;"), (Tokens{"hi"}));
  // SPPUNC keeps numeric entities; SPLET letters stay inside words; &nbsp; is a space.
  EXPECT_EQ(
      ptb_tokenize("&#169; &eacute;t&eacute; a&nbsp;b"), (Tokens{"&#169;", "&eacute;t&eacute;", "a", "b"}));
  // LESSTHAN / GREATERTHAN read &lt; and &gt;.
  EXPECT_EQ(ptb_tokenize("&lt;b&gt;"), (Tokens{"<", "b", ">"}));
}

TEST(PtbTokenize, AbbreviationListsAreCaseSensitiveWhereTheFlexSaysSo) {
  // ABSTATE's [M]ass needs a capital M; the lexer runs before lower-casing.
  EXPECT_EQ(ptb_tokenize("in Mass. or mass. now"), (Tokens{"in", "mass.", "or", "mass", "now"}));
  // ABBREV1 sentence-finally: "Calif." then "." again, which the list removes.
  EXPECT_EQ(ptb_tokenize("she lives in Calif."), (Tokens{"she", "lives", "in", "calif."}));
  // Literals are caseless: ABTITLE's Mr matches MR.
  EXPECT_EQ(ptb_tokenize("MR. SMITH"), (Tokens{"mr.", "smith"}));
  // ABCOMP's Pp?t[ye]s? has a lower-case class, so "PTY." is no abbreviation.
  EXPECT_EQ(ptb_tokenize("Pty. PTY."), (Tokens{"pty.", "pty"}));
}

TEST(PtbTokenize, AbbreviationsBeforeNumbersAndAcronymsBeforeSentenceStarters) {
  // ABBREV3 keeps its period only before a digit.
  EXPECT_EQ(ptb_tokenize("fig. 3 fig. a"), (Tokens{"fig.", "3", "fig", "a"}));
  // (pt[eyEY]|co)\./{SPACE}(ltd|lim).
  EXPECT_EQ(ptb_tokenize("Co. Ltd"), (Tokens{"co.", "ltd"}));
  // ACRONYM before "The": "U.S." and a period; a one-letter acronym gives the letter alone.
  EXPECT_EQ(ptb_tokenize("the U.S. The end"), (Tokens{"the", "u.s.", "the", "end"}));
  EXPECT_EQ(ptb_tokenize("letter I. The end"), (Tokens{"letter", "i", "the", "end"}));
  EXPECT_EQ(ptb_tokenize("letter I. the end"), (Tokens{"letter", "i.", "the", "end"}));
}

TEST(PtbTokenize, CliticsAndLeadingApostrophes) {
  // 'tis and 'twas split after "'t"; APOWORD keeps 'n' 'em '90s 'til 'cause whole.
  EXPECT_EQ(ptb_tokenize("'Tis 'twas"), (Tokens{"'t", "is", "'t", "was"}));
  EXPECT_EQ(
      ptb_tokenize("rock 'n' roll 'em '90s 'til 'cause"),
      (Tokens{"rock", "'n'", "roll", "'em", "'90s", "'til", "'cause"}));
  // APOWORD2: y' before a letter.
  EXPECT_EQ(ptb_tokenize("y'all"), (Tokens{"y'", "all"}));
  // Assimilations push back two units: gotta -> got ta; cannot pushes back three.
  EXPECT_EQ(ptb_tokenize("gotta lemme Cannot"), (Tokens{"got", "ta", "lem", "me", "can", "not"}));
  // REDAUX takes a right single quote and capitals: IT'S -> IT 'S; it’s -> it 's.
  EXPECT_EQ(ptb_tokenize("IT'S it\u2019s"), (Tokens{"it", "'s", "it", "'s"}));
  // SWORD/SREDAUX: n't splits off; THING keeps o'clock.
  EXPECT_EQ(ptb_tokenize("DON'T o'clock"), (Tokens{"do", "n't", "o'clock"}));
}

TEST(PtbTokenize, UrlsEmailsAndTwitterNames) {
  // FULLURL cannot end in '.'; LIKELYURL needs www. or a .com/.net/.org/.edu domain.
  EXPECT_EQ(
      ptb_tokenize("see http://example.com/a_b?x=1. or www.google.com"),
      (Tokens{"see", "http://example.com/a_b?x=1", "or", "www.google.com"}));
  // EMAIL: its last label may hold a comma, so a comma right after an address stays on it.
  EXPECT_EQ(ptb_tokenize("mail john.doe@example.com, ok"), (Tokens{"mail", "john.doe@example.com,", "ok"}));
  EXPECT_EQ(ptb_tokenize("mail john.doe@example.com ok"), (Tokens{"mail", "john.doe@example.com", "ok"}));
  EXPECT_EQ(ptb_tokenize("@user #tag"), (Tokens{"@user", "#tag"}));
}

TEST(PtbTokenize, CurrencyAndFractions) {
  // DOLSIGN: capitals before $ join it; DOLSIGN2 with normalizeCurrency.
  EXPECT_EQ(
      ptb_tokenize("US$5 \u00a33 \u20ac2 \u00a2 \u00a5"),
      (Tokens{"us$", "5", "#", "3", "$", "2", "cents", "\u00a5"}));
  // FRAC2 with normalizeFractions (escapeForwardSlashAsterisk is off: no backslash); U+215B stays.
  EXPECT_EQ(ptb_tokenize("\u00bd \u00be \u215b"), (Tokens{"1/2", "3/4", "\u215b"}));
  // FRAC joins "3 1/2" with U+00A0 into one token.
  EXPECT_EQ(ptb_tokenize("3 1/2 cups 3-1/2"), (Tokens{"3\u00a01/2", "cups", "3-1/2"}));
}

TEST(PtbTokenize, SplittingAtPythonWhitespaceCutsWhatTheLexerJoined) {
  // str.split() under Python 3: U+00A0, U+2003 and the ASCII separators cut; empty pieces go.
  EXPECT_EQ(
      split_at_python_whitespace({"3\u00a01/2", "a\u2003b\u00a0", "cups", "\u00a0"}),
      (Tokens{"3", "1/2", "a", "b", "cups"}));
  // Not whitespace to Python: U+200B (zero width) and U+FEFF.
  EXPECT_EQ(split_at_python_whitespace({"a\u200bb\ufeffc"}), (Tokens{"a\u200bb\ufeffc"}));
}

TEST(PtbTokenize, EmojiAndSymbols) {
  // Surrogate units are untokenizable and deleted; they still end a word.
  EXPECT_EQ(ptb_tokenize("\U0001F600 dog a\U0001F600b"), (Tokens{"dog", "a", "b"}));
  // MISCSYMBOL keeps math, arrows and signs as tokens.
  EXPECT_EQ(
      ptb_tokenize("\u2713 \u2192 \u221e \u00a9 \u00ae \u2122"),
      (Tokens{"\u2713", "\u2192", "\u221e", "\u00a9", "\u00ae", "\u2122"}));
  // Invalid UTF-8 reads as U+FFFD, which is untokenizable.
  EXPECT_EQ(
      ptb_tokenize("ab\xff"
                   "cd"),
      (Tokens{"ab", "cd"}));
}

TEST(PtbTokenize, UnicodeQuotesDashesSpacesAndInvisibles) {
  // QUOTES takes up to two quote characters: “” is one token, ``'' , which the list keeps.
  EXPECT_EQ(ptb_tokenize("\u201cball\u201d \u201c\u201d"), (Tokens{"ball", "``''"}));
  // SPMDASH -> "--"; HYPHENS of 3 or 4 -> "--"; 5 stay as they are.
  EXPECT_EQ(ptb_tokenize("a\u2014b x---y -----"), (Tokens{"a", "b", "x", "y", "-----"}));
  // Soft hyphens are removed from words; zero-width space and BOM separate; U+3000 is a space.
  EXPECT_EQ(
      ptb_tokenize("soft\u00adware a\u200bb c\ufeffd e\u3000f"),
      (Tokens{"software", "a", "b", "c", "d", "e", "f"}));
  // LDOTS: spaced dots and U+2026 are "...".
  EXPECT_EQ(ptb_tokenize("a . . . b\u2026"), (Tokens{"a", "b"}));
}

TEST(PtbTokenize, LowerCasesAllOfUnicodeLikeJava) {
  // String.toLowerCase(Locale.ENGLISH): final sigma, U+0130 -> i + U+0307, Cyrillic.
  EXPECT_EQ(
      ptb_tokenize("\u039f\u0394\u039f\u03a3 \u0130 \u0414\u041e\u041c \u00c7\u00c0"),
      (Tokens{"\u03bf\u03b4\u03bf\u03c2", "i\u0307", "\u0434\u043e\u043c", "\u00e7\u00e0"}));
}

TEST(PtbTokenize, BracketNamesAndEmoticons) {
  // TBSPEC: a typed -LRB- is a token, lower-cased like the brackets themselves.
  EXPECT_EQ(ptb_tokenize("-LRB- -rsb-"), (Tokens{"-lrb-", "-rsb-"}));
  // SMILEY (parentheses renamed) and ASIANSMILEY.
  EXPECT_EQ(ptb_tokenize(":) :-( :D ^_^"), (Tokens{":-rrb-", ":--lrb-", ":d", "^_^"}));
}

TEST(PtbTokenize, LatexQuotesGuessTheirSide) {
  // DBLQUOT before a letter is ``, otherwise ''; ' before a letter and a non-space is `.
  EXPECT_EQ(ptb_tokenize("\"hi\" 'yo' \"5\""), (Tokens{"hi", "yo", "5"}));
  // ''x'' : QUOTES '' then WORD; nothing else is left.
  EXPECT_EQ(ptb_tokenize("''x'' ``y''"), (Tokens{"x", "y"}));
}

TEST(PtbTokenize, LineBreaksInsideACaptionSeparateTokens) {
  // NEWLINE (\r, U+2028, U+0085 ...) would start a new output line in coco-caption and shift the
  // captions after it; here they separate tokens. U+0085 is also LDOTS, an earlier rule: "...".
  EXPECT_EQ(ptb_tokenize("a\rb\u2028c\u0085d"), (Tokens{"a", "b", "c", "d"}));
}

TEST(PtbTokenize, EmptyAndPunctuationOnlyCaptionsHaveNoTokens) {
  EXPECT_TRUE(ptb_tokenize("").empty());
  EXPECT_TRUE(ptb_tokenize(" . , ! ? ; : -- ... \"\" \t\n").empty());
}

}  // namespace
}  // namespace saccade
