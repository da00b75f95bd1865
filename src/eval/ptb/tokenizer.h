// PTB normalization: the tokens coco-caption scores, made from a raw caption.
//
//   ptb_tokenize("A man's (red) umbrella, isn't it?")
//     -> {"a", "man", "'s", "-lrb-", "red", "-rrb-", "umbrella", "is", "n't", "it"}
//
// coco-caption (pycocoevalcap/tokenizer/ptbtokenizer.py) writes the captions one per line,
// each '\n' inside one replaced by a space, runs Stanford CoreNLP 3.4.1's PTBTokenizer
// (`-preserveLines -lowerCase`) on them, decodes its output as UTF-8, and for each line keeps
// the space-separated pieces that are not in its PUNCTUATIONS list: '' ' `` ` . ? ! , : ; - --
// ... (the list also names -LRB- -RRB- -LCB- -RCB-, in upper case, while the lower-cased output
// says -lrb-, so brackets stay and are scored like words). rouge.py and meteor.py take those
// pieces as they are; bleu and cider split them again at any whitespace (Python 3's str.split()).
// This function reproduces the pieces without Java:
//   - the lexer is PTBLexer.flex of 3.4.1 rule for rule (ptb/lexer.h): SGML tags, entities,
//     abbreviation lists, clitics, URLs, e-mail, numbers, fractions, currency, emoticons,
//     quotes, dashes, ellipses, and deletion of characters no rule knows (emoji among them);
//   - the text is UTF-8 read the way Java reads it (invalid bytes become U+FFFD), lexed as
//     UTF-16, and tokens are lower-cased as Java's String.toLowerCase(Locale.ENGLISH) does;
//   - a space inside a token is U+00A0 ("3 1/2" is one token, as are phone numbers and SGML
//     tags with attributes); split_at_python_whitespace cuts such tokens for BLEU and CIDEr-D.
// coco-caption lexes all the captions of one side as one file, a caption per line, and a few rules
// look past a line's end: an acronym of one letter ("C.") loses its period when the next caption
// starts with one of ACRONYM's words ("A", "The", ...), and "fig." "no." keep theirs when it
// starts with a digit. So:
//   - ptb_tokenize_captions lexes a list the same way, each caption before the next and the last
//     before the end of the text;
//   - ptb_tokenize lexes one caption as if a line starting with a lower-case word followed it;
//   - a line break the lexer sees inside a caption (\r, U+2028, U+2029, U+000B, U+000C) makes
//     PTBTokenizer start a new output line, which shifts every later caption in coco-caption;
//     here it only separates tokens, and the caption keeps all of its own.
// Lower-casing follows this machine's Python Unicode tables (ptb/unicode.h), which differ from
// Java's only for letters newer than the Java in use.
#pragma once

#include <string>
#include <vector>

namespace saccade {

// The tokens coco-caption's tokenizer gives for `caption` (UTF-8), which its ROUGE-L and METEOR
// score. Empty when nothing but punctuation, spaces and untokenizable characters remain.
std::vector<std::string> ptb_tokenize(const std::string& caption);

// Each caption's tokens when `captions` are lexed as coco-caption's file holds them, in this order.
std::vector<std::vector<std::string>> ptb_tokenize_captions(const std::vector<std::string>& captions);

// `tokens` (UTF-8) split again at Python whitespace, without empty pieces: the words coco-caption's
// BLEU and CIDEr-D score (str.split() under Python 3, which cuts at U+00A0).
std::vector<std::string> split_at_python_whitespace(const std::vector<std::string>& tokens);

}  // namespace saccade
