// PTB normalization: the tokens coco-caption scores, made from a raw caption.
//
//   ptb_tokenize("A man's (red) umbrella, isn't it?")
//     -> {"a", "man", "'s", "-lrb-", "red", "-rrb-", "umbrella", "is", "n't", "it"}
//
// coco-caption runs every caption, references and candidates alike, through Stanford CoreNLP
// 3.4.1's PTBTokenizer (`-preserveLines -lowerCase`) and then drops the tokens in its
// PUNCTUATIONS list: '' ' `` ` . ? ! , : ; - -- ... (pycocoevalcap/tokenizer/ptbtokenizer.py).
// That list also names -LRB- -RRB- -LCB- -RCB-, but in upper case, while the lower-cased output
// says -lrb-, so bracket tokens survive and are scored like words. This function reproduces
// that pipeline for the text captions contain, without Java:
//   - lower-casing (ASCII and Latin-1 letters);
//   - punctuation split off words; a word keeps inner hyphens, slashes, apostrophes
//     ("o'clock") and dots ("3.5", "e.g."), and commas and colons between digits ("1,000",
//     "10:30"); dotted acronyms and common abbreviations keep their period ("u.s.", "mr.", "st.");
//   - clitics split as in the Penn Treebank: "man's" -> "man" "'s", "isn't" -> "is" "n't",
//     "can't" -> "ca" "n't", "they're" "i'm" "we've" "it'll" "i'd" likewise; "cannot" -> "can"
//     "not", "gonna" -> "gon" "na" (also gotta, wanna, gimme, lemme);
//   - ( ) [ ] { } -> -lrb- -rrb- -lsb- -rsb- -lcb- -rcb-; runs of ? and ! are one token ("?!",
//     kept, as it is not in the list); curly quotes, en/em dashes and the ellipsis character
//     are treated as their ASCII forms.
// Not reproduced: CoreNLP's British-to-American respelling ("colour" -> "color"), its SGML,
// URL, e-mail and emoticon rules, and the escaping of / and * (a renaming that changes no score).
#pragma once

#include <string>
#include <vector>

namespace saccade {

// The tokens coco-caption would score for `caption` (UTF-8). Empty when nothing but
// punctuation and spaces remain.
std::vector<std::string> ptb_tokenize(const std::string& caption);

}  // namespace saccade
