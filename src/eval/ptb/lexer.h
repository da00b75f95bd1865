// The lexer of Stanford CoreNLP 3.4.1's PTBTokenizer (edu/stanford/nlp/process/PTBLexer.flex,
// git tag v3.4.1), with the options its command line sets by default plus tokenizeNLs:
// ptb3Escaping on (-LRB- etc., `` and '' quotes, "--" dashes, "..." ellipses, currency and
// fraction normalizing, spaces inside tokens made U+00A0), americanize and
// escapeForwardSlashAsterisk off, splitAssimilations on ("cannot" -> "can" "not"), and
// untokenizable characters deleted.
//
//   ptb_lex(u"Mr. Smith's <unk> (AT&T)")  // texts u"Mr.", u"Smith", u"'s", u"<unk>", u"-LRB-", u"AT&T",
//   u"-RRB-"
//
// Tokens keep their case (PTBTokenizer's -lowerCase acts on its output). Line breaks separate
// tokens; their *NL* tokens are not returned. Each token says where its text begins, which tells
// the line it came from.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace saccade {

struct PtbToken {
  std::u16string text;
  size_t begin = 0;  // where the text it came from begins in the lexed text, in UTF-16 units
};

std::vector<PtbToken> ptb_lex(std::u16string_view text);

}  // namespace saccade
