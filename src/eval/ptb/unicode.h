// The Java text semantics the PTB tokenizer reproduces: how CoreNLP reads UTF-8 into UTF-16
// chars, what its scanner's Unicode classes hold, how Java lower-cases, how it writes UTF-8.
//
//   ptb_java_lower_case(ptb_utf8_to_utf16("ΟΔΟΣ İ"))  // u"οδος i\u0307"
//
// CoreNLP's scanner works on UTF-16 code units: a character above U+FFFF is two surrogate
// units, each of which is in no letter or digit class.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace saccade {

// Java's InputStreamReader decoding of UTF-8: a malformed sequence becomes one U+FFFD per
// malformed unit as JDK's decoder delimits them (a stray byte, a truncated sequence, an encoded
// surrogate), so "\xE2\x82Z" reads as U+FFFD 'Z' and "\xC0\x80" as two U+FFFD.
std::u16string ptb_utf8_to_utf16(const std::string& text);

// Java's UTF-8 encoding of a string: an unpaired surrogate becomes '?'.
std::string ptb_utf16_to_utf8(const std::u16string& text);

// String.toLowerCase(Locale.ENGLISH): per code point, with U+0130 -> "i\u0307" and capital
// sigma -> final sigma at the end of a word. Java finds words with its BreakIterator; here a word
// is a run of letters, digits and marks, and ' . - : join two letters (close, not identical).
std::u16string ptb_java_lower_case(const std::u16string& text);

// Properties of a UTF-16 code unit, as a bit set.
enum PtbCharBit : uint8_t {
  kPtbLetter = 1,    // JFlex [:letter:] in CoreNLP 3.4.1 (Java's Character.isLetter of 2014)
  kPtbDigit = 2,     // JFlex [:digit:] (Character.isDigit)
  kPtbUpper = 4,     // JFlex [:uppercase:] (Character.isUpperCase)
  kPtbCased = 8,     // Unicode's Cased property (final sigma)
  kPtbWordPart = 16  // stays inside a word for the final-sigma rule
};
uint8_t ptb_char_bits(char16_t unit);

// Generated tables (ptb/unicode_tables.cpp). A run gives the bits of the units from `first`
// up to the next run's first.
struct PtbCharRun {
  char16_t first;
  uint8_t bits;
};
extern const PtbCharRun kPtbCharRuns[];
extern const size_t kPtbCharRunCount;
// Code points first, first + step, ..., last lower-case to themselves plus `delta`.
struct PtbLowerRange {
  char32_t first;
  char32_t last;
  int32_t delta;
  int32_t step;
};
extern const PtbLowerRange kPtbLowerRanges[];
extern const size_t kPtbLowerRangeCount;

}  // namespace saccade
