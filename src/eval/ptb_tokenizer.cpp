// coco-caption's tokenization of one caption (see ptb_tokenizer.h): CoreNLP's lexer, Java's
// lower-casing and UTF-8 output, then ptbtokenizer.py's splitting and punctuation removal.
#include "eval/ptb_tokenizer.h"

#include <algorithm>
#include <array>

#include "eval/ptb_lexer.h"
#include "eval/ptb_unicode.h"

namespace saccade {
namespace {

// ptbtokenizer.py's PUNCTUATIONS. -LRB- -RRB- -LCB- -RCB- are there too, but upper case, and
// the lower-cased output never holds them.
const std::array<std::u16string_view, 13> kRemovedTokens = {u"''", u"'", u"``", u"`",  u".",   u"?", u"!",
                                                            u",",  u":", u"-",  u"--", u"...", u";"};

// Python 3's str.isspace() for UTF-16 units (every such character is in the BMP).
bool is_python_space(char16_t unit) {
  return (unit >= 0x09 && unit <= 0x0D) || (unit >= 0x1C && unit <= 0x20) || unit == 0x85 || unit == 0xA0 ||
         unit == 0x1680 || (unit >= 0x2000 && unit <= 0x200A) || unit == 0x2028 || unit == 0x2029 ||
         unit == 0x202F || unit == 0x205F || unit == 0x3000;
}

// The output line PTBTokenizer writes for the caption: lower-cased tokens joined by spaces, with
// unpaired surrogates as '?', the way Java's UTF-8 writer replaces them.
std::u16string tokenizer_line(const std::string& caption) {
  std::string text = caption;
  std::replace(text.begin(), text.end(), '\n', ' ');
  // coco-caption's input file ends every caption but the last with a line break; the lexer's
  // trailing-context rules look at it.
  text += '\n';
  std::u16string line;
  for (const std::u16string& token : ptb_lex(ptb_utf8_to_utf16(text))) {
    if (!line.empty()) line += u' ';
    std::u16string lower = ptb_java_lower_case(token);
    for (size_t i = 0; i < lower.size(); ++i) {
      const bool high = lower[i] >= 0xD800 && lower[i] <= 0xDBFF;
      const bool paired = high && i + 1 < lower.size() && lower[i + 1] >= 0xDC00 && lower[i + 1] <= 0xDFFF;
      if (paired) {
        ++i;
      } else if (lower[i] >= 0xD800 && lower[i] <= 0xDFFF) {
        lower[i] = u'?';
      }
    }
    line += lower;
  }
  return line;
}

}  // namespace

std::vector<std::string> ptb_tokenize(const std::string& caption) {
  // ptbtokenizer.py: line.rstrip().split(' '), then drop PUNCTUATIONS.
  const std::u16string owned = tokenizer_line(caption);
  std::u16string_view line = owned;
  while (!line.empty() && is_python_space(line.back())) line.remove_suffix(1);
  std::vector<std::string> kept;
  if (line.empty()) return kept;  // Python's [''], an empty caption to ROUGE-L as no tokens are
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i) {
    if (i < line.size() && line[i] != u' ') continue;
    const std::u16string_view piece = line.substr(start, i - start);
    if (std::find(kRemovedTokens.begin(), kRemovedTokens.end(), piece) == kRemovedTokens.end()) {
      kept.push_back(ptb_utf16_to_utf8(std::u16string(piece)));
    }
    start = i + 1;
  }
  return kept;
}

std::vector<std::string> split_at_python_whitespace(const std::vector<std::string>& tokens) {
  std::vector<std::string> words;
  for (const std::string& token : tokens) {
    const std::u16string text = ptb_utf8_to_utf16(token);
    size_t start = 0;
    for (size_t i = 0; i <= text.size(); ++i) {
      if (i == text.size() || is_python_space(text[i])) {
        if (i > start) words.push_back(ptb_utf16_to_utf8(text.substr(start, i - start)));
        start = i + 1;
      }
    }
  }
  return words;
}

}  // namespace saccade
