// Java's UTF-8 decoding and encoding, character classes and lower-casing (see ptb/unicode.h).
#include "eval/ptb/unicode.h"

#include <algorithm>
#include <string_view>

#include "base/text.h"

namespace saccade {
namespace {

constexpr char16_t kReplacement = 0xFFFD;

bool is_continuation(const std::string& text, size_t i) {
  return i < text.size() && (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
}

// Whether the second byte of a sequence led by `lead` is allowed (JDK's shortest-form and
// range checks on it); a byte past the end is not.
bool second_byte_ok(unsigned char lead, const std::string& text, size_t i) {
  if (!is_continuation(text, i)) return false;
  const auto second = static_cast<unsigned char>(text[i]);
  if (lead == 0xE0) return second >= 0xA0;
  if (lead == 0xF0) return second >= 0x90;
  if (lead == 0xF4) return second <= 0x8F;
  return true;
}

void append_code_point(char32_t cp, std::u16string& out) {
  if (cp < 0x10000) {
    out += static_cast<char16_t>(cp);
  } else {
    cp -= 0x10000;
    out += static_cast<char16_t>(0xD800 + (cp >> 10));
    out += static_cast<char16_t>(0xDC00 + (cp & 0x3FF));
  }
}

// Decodes the sequence at `i` into `out` and returns its length in bytes; a malformed unit
// appends one U+FFFD.
size_t decode_one(const std::string& text, size_t i, std::u16string& out) {
  const auto lead = static_cast<unsigned char>(text[i]);
  const size_t length = lead < 0x80   ? 1
                        : lead < 0xC2 ? 0
                        : lead < 0xE0 ? 2
                        : lead < 0xF0 ? 3
                        : lead < 0xF5 ? 4
                                      : 0;
  if (length == 1) {
    out += static_cast<char16_t>(lead);
    return 1;
  }
  if (length == 0 || !second_byte_ok(lead, text, i + 1)) {
    out += kReplacement;
    return 1;
  }
  for (size_t k = 2; k < length; ++k) {
    if (!is_continuation(text, i + k)) {
      out += kReplacement;
      return k;
    }
  }
  char32_t cp = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
  append_code_point(cp >= 0xD800 && cp <= 0xDFFF ? kReplacement : cp, out);
  return length;
}

bool is_high_surrogate(char16_t unit) {
  return unit >= 0xD800 && unit <= 0xDBFF;
}
bool is_low_surrogate(char16_t unit) {
  return unit >= 0xDC00 && unit <= 0xDFFF;
}

char32_t code_point_at(const std::u16string& text, size_t i) {
  if (is_high_surrogate(text[i]) && i + 1 < text.size() && is_low_surrogate(text[i + 1])) {
    return 0x10000 + ((text[i] - 0xD800) << 10) + (text[i + 1] - 0xDC00);
  }
  return text[i];
}

char32_t simple_lower(char32_t cp) {
  const PtbLowerRange* end = kPtbLowerRanges + kPtbLowerRangeCount;
  const PtbLowerRange* it = std::upper_bound(
      kPtbLowerRanges, end, cp,
      [](char32_t value, const PtbLowerRange& range) { return value < range.first; });
  if (it == kPtbLowerRanges) return cp;
  --it;
  if (cp > it->last || (cp - it->first) % it->step != 0) return cp;
  return static_cast<char32_t>(static_cast<int32_t>(cp) + it->delta);
}

bool has_bit(char16_t unit, uint8_t bit) {
  return (ptb_char_bits(unit) & bit) != 0;
}

// Whether the unit at `i` keeps its neighbours in one word: letters, digits and marks do; a
// joiner (' . - : and the like) does only between two letters.
bool joins_word(const std::u16string& text, size_t i) {
  if (!has_bit(text[i], kPtbWordPart)) return false;
  if (std::u16string_view(u"'.-:\u2019\u00B7").find(text[i]) == std::u16string_view::npos) return true;
  return i > 0 && i + 1 < text.size() && has_bit(text[i - 1], kPtbLetter) && has_bit(text[i + 1], kPtbLetter);
}

// Java's final-sigma condition for the capital sigma at `i`: a cased letter before it and none
// after it, within its word.
bool is_final_sigma(const std::u16string& text, size_t i) {
  bool cased_before = false;
  for (size_t k = i; k > 0 && joins_word(text, k - 1); --k) {
    if (has_bit(text[k - 1], kPtbCased)) {
      cased_before = true;
      break;
    }
  }
  if (!cased_before) return false;
  for (size_t k = i + 1; k < text.size() && joins_word(text, k); ++k) {
    if (has_bit(text[k], kPtbCased)) return false;
  }
  return true;
}

}  // namespace

std::u16string ptb_utf8_to_utf16(const std::string& text) {
  std::u16string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) i += decode_one(text, i, out);
  return out;
}

std::string ptb_utf16_to_utf8(const std::u16string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char32_t cp = text[i];
    if (is_high_surrogate(text[i]) && i + 1 < text.size() && is_low_surrogate(text[i + 1])) {
      cp = code_point_at(text, i++);
    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
      cp = '?';
    }
    append_utf8(out, cp);
  }
  return out;
}

std::u16string ptb_java_lower_case(const std::u16string& text) {
  std::u16string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    const char32_t cp = code_point_at(text, i);
    if (cp == 0x130) {
      out += u"i\u0307";
    } else if (cp == 0x3A3) {
      out += is_final_sigma(text, i) ? u'\u03C2' : u'\u03C3';
    } else {
      append_code_point(simple_lower(cp), out);
    }
    i += cp >= 0x10000 ? 2 : 1;
  }
  return out;
}

uint8_t ptb_char_bits(char16_t unit) {
  const PtbCharRun* end = kPtbCharRuns + kPtbCharRunCount;
  const PtbCharRun* it = std::upper_bound(
      kPtbCharRuns, end, unit, [](char16_t value, const PtbCharRun& run) { return value < run.first; });
  return (it - 1)->bits;
}

}  // namespace saccade
