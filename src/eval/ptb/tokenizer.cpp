// coco-caption's tokenization of one caption (see ptb/tokenizer.h): CoreNLP's lexer, Java's
// lower-casing and UTF-8 output, then ptbtokenizer.py's splitting and punctuation removal.
#include "eval/ptb/tokenizer.h"

#include <algorithm>
#include <array>

#include "eval/ptb/lexer.h"
#include "eval/ptb/unicode.h"

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

// Appends a token as PTBTokenizer writes it: lower-cased, with unpaired surrogates as '?', the
// way Java's UTF-8 writer replaces them.
void append_output_token(std::u16string& out, const PtbToken& token) {
  std::u16string lower = ptb_java_lower_case(token.text);
  for (size_t i = 0; i < lower.size(); ++i) {
    const bool high = lower[i] >= 0xD800 && lower[i] <= 0xDBFF;
    const bool paired = high && i + 1 < lower.size() && lower[i + 1] >= 0xDC00 && lower[i + 1] <= 0xDFFF;
    if (paired) {
      ++i;
    } else if (lower[i] >= 0xD800 && lower[i] <= 0xDFFF) {
      lower[i] = u'?';
    }
  }
  out += lower;
}

// ptbtokenizer.py's tokens of one output line: line.rstrip().split(' '), less PUNCTUATIONS.
std::vector<std::string> kept_pieces(std::u16string_view line) {
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

// Each caption's tokens when `captions` are lexed as one text, one per line ('\n' inside one
// made a space), the last followed by `ending`: the lexer's trailing-context rules look past a
// line's end. PTBTokenizer writes the tokens joined by ' ', each line break between them as a
// '\n'; a token that holds a line break (an SGML tag with a quoted attribute may) keeps it raw,
// and ptbtokenizer.py's split('\n') cuts the token there, its rest going to the next caption.
std::vector<std::vector<std::string>> tokenize_lines(
    const std::vector<std::string>& captions, std::u16string_view ending) {
  std::u16string text;
  std::vector<size_t> breaks;  // where each '\n' between two captions is
  if (captions.empty()) return {};
  for (size_t i = 0; i < captions.size(); ++i) {
    if (i > 0) {
      breaks.push_back(text.size());
      text += u'\n';
    }
    std::string line = captions[i];
    std::replace(line.begin(), line.end(), '\n', ' ');
    text += ptb_utf8_to_utf16(line);
  }
  text += ending;
  std::u16string output;
  size_t breaks_written = 0;  // as '\n' of the output, between tokens or inside one
  for (const PtbToken& token : ptb_lex(text)) {
    const auto breaks_before =
        static_cast<size_t>(std::lower_bound(breaks.begin(), breaks.end(), token.begin) - breaks.begin());
    if (breaks_before > breaks_written) {
      output.append(breaks_before - breaks_written, u'\n');
      breaks_written = breaks_before;
    } else if (!output.empty() && output.back() != u'\n') {
      output += u' ';
    }
    append_output_token(output, token);
    breaks_written += static_cast<size_t>(std::count(token.text.begin(), token.text.end(), u'\n'));
  }
  if (breaks.size() > breaks_written) output.append(breaks.size() - breaks_written, u'\n');
  std::vector<std::vector<std::string>> lines;
  size_t start = 0;
  for (size_t i = 0; i <= output.size(); ++i) {
    if (i < output.size() && output[i] != u'\n') continue;
    lines.push_back(kept_pieces(std::u16string_view(output).substr(start, i - start)));
    start = i + 1;
  }
  return lines;
}

}  // namespace

std::vector<std::string> ptb_tokenize(const std::string& caption) {
  // As one caption of coco-caption's file that another follows.
  return tokenize_lines({caption}, u"\n").front();
}

std::vector<std::vector<std::string>> ptb_tokenize_captions(const std::vector<std::string>& captions) {
  return tokenize_lines(captions, u"");
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
