// PTB normalization (see ptb_tokenizer.h): the caption is lower-cased with a few Unicode
// punctuation marks mapped to ASCII, then one left-to-right scan cuts it into tokens.
#include "eval/ptb_tokenizer.h"

#include <map>
#include <set>

namespace saccade {
namespace {

// coco-caption's PUNCTUATIONS list as it acts on lower-cased tokens (its -LRB- -RRB- -LCB-
// -RCB- entries never match; see the header).
const std::set<std::string> kRemovedTokens = {"''", "'", "``", "`", ".",  "?",  "!",
                                              ",",  ":", ";",  "-", "--", "..."};

// Words PTBTokenizer keeps together with a following period.
const std::set<std::string> kAbbreviations = {"mr", "mrs", "ms", "dr",  "st",   "jr", "sr",
                                              "mt", "ft",  "vs", "etc", "prof", "ave"};

// PTB's names for brackets; a double quote becomes a quote token (removed either way).
const std::map<char, std::string> kSymbolTokens = {{'(', "-lrb-"}, {')', "-rrb-"}, {'[', "-lsb-"},
                                                   {']', "-rsb-"}, {'{', "-lcb-"}, {'}', "-rcb-"},
                                                   {'"', "''"}};

// Clitics split off the end of a word ("man's" -> "man" "'s").
const std::set<std::string> kClitics = {"'s", "'re", "'ve", "'m", "'ll", "'d"};

bool is_word_byte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c >= 0x80;
}
bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

// Lower-cases ASCII and Latin-1 letters (U+00C0..U+00DE but U+00D7, the multiplication sign),
// maps curly quotes, en/em dashes, the ellipsis and no-break space to ASCII, and control
// characters to spaces.
std::string fold(const std::string& caption) {
  std::string text;
  text.reserve(caption.size());
  for (size_t i = 0; i < caption.size(); ++i) {
    const auto c = static_cast<unsigned char>(caption[i]);
    const auto next = i + 1 < caption.size() ? static_cast<unsigned char>(caption[i + 1]) : 0;
    const auto third = i + 2 < caption.size() ? static_cast<unsigned char>(caption[i + 2]) : 0;
    if (c >= 'A' && c <= 'Z') {
      text += static_cast<char>(c - 'A' + 'a');
    } else if (c < 0x20 || c == 0x7F) {
      text += ' ';
    } else if (c == 0xC3 && next >= 0x80 && next <= 0x9E && next != 0x97) {
      text += static_cast<char>(c);
      text += static_cast<char>(next + 0x20);
      ++i;
    } else if (c == 0xC2 && next == 0xA0) {
      text += ' ';
      ++i;
    } else if (c == 0xE2 && next == 0x80 && (third == 0x98 || third == 0x99 || third == 0x9B)) {
      text += '\'';
      i += 2;
    } else if (c == 0xE2 && next == 0x80 && (third == 0x9C || third == 0x9D || third == 0x9E)) {
      text += '"';
      i += 2;
    } else if (c == 0xE2 && next == 0x80 && (third == 0x93 || third == 0x94)) {
      text += "--";
      i += 2;
    } else if (c == 0xE2 && next == 0x80 && third == 0xA6) {
      text += "...";
      i += 2;
    } else {
      text += static_cast<char>(c);
    }
  }
  return text;
}

// Whether the punctuation byte at `j` joins the word characters on both sides into one word.
bool joins_word(const std::string& text, size_t j) {
  if (j + 1 >= text.size() || !is_word_byte(text[j + 1])) return false;
  switch (text[j]) {
    case '-':
    case '/':
    case '\'':
    case '.':
      return true;
    case ',':
    case ':':
      return is_digit(text[j - 1]) && is_digit(text[j + 1]);
    default:
      return false;
  }
}

// "u.s", "e.g": single letters joined by dots.
bool is_dotted_acronym(const std::string& word) {
  if (word.size() < 3 || word.size() % 2 == 0) return false;
  for (size_t k = 0; k < word.size(); ++k) {
    const bool letter = word[k] >= 'a' && word[k] <= 'z';
    if (k % 2 == 0 ? !letter : word[k] != '.') return false;
  }
  return true;
}

// Appends `word` with its clitic or assimilation split off, as the Penn Treebank does.
void push_word(const std::string& word, std::vector<std::string>& tokens) {
  static const std::vector<std::pair<std::string, size_t>> kAssimilations = {
      {"cannot", 3}, {"gonna", 3}, {"gotta", 3}, {"wanna", 3}, {"gimme", 3}, {"lemme", 3}};
  for (const auto& [whole, head] : kAssimilations) {
    if (word == whole) {
      tokens.push_back(word.substr(0, head));
      tokens.push_back(word.substr(head));
      return;
    }
  }
  size_t split = std::string::npos;
  if (word.size() > 3 && word.compare(word.size() - 3, 3, "n't") == 0) {
    split = word.size() - 3;
  } else if (const size_t apostrophe = word.rfind('\''); apostrophe != std::string::npos && apostrophe > 0 &&
                                                         kClitics.count(word.substr(apostrophe)) > 0) {
    split = apostrophe;
  }
  if (split == std::string::npos) {
    tokens.push_back(word);
  } else {
    tokens.push_back(word.substr(0, split));
    tokens.push_back(word.substr(split));
  }
}

// The length of a clitic ("'s", "'ll", ...) that starts at `i` and stands alone, or 0.
size_t standalone_clitic(const std::string& text, size_t i) {
  for (const auto& clitic : kClitics) {
    const size_t end = i + clitic.size();
    if (text.compare(i, clitic.size(), clitic) == 0 && (end == text.size() || !is_word_byte(text[end]))) {
      return clitic.size();
    }
  }
  return 0;
}

std::vector<std::string> scan(const std::string& text) {
  std::vector<std::string> tokens;
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const char c = text[i];
    if (c == ' ') {
      ++i;
    } else if (is_word_byte(c)) {
      size_t j = i + 1;
      while (j < n && (is_word_byte(text[j]) || joins_word(text, j))) ++j;
      std::string word = text.substr(i, j - i);
      const bool period_follows = j < n && text[j] == '.' && text.compare(j, 3, "...") != 0;
      if (period_follows && (is_dotted_acronym(word) || kAbbreviations.count(word) > 0)) {
        word += '.';
        ++j;
      }
      push_word(word, tokens);
      i = j;
    } else if (c == '.' || c == '?' || c == '!' || c == '-' || c == '`') {
      // Runs: "..." (any length >= 3) and "--" are one token each, as are "?!" and "``".
      size_t j = i + 1;
      const bool question_bang = c == '?' || c == '!';
      while (j < n && (question_bang ? (text[j] == '?' || text[j] == '!') : text[j] == c)) ++j;
      const size_t run = j - i;
      if (c == '.' && run < 3) {
        j = i + 1;
        tokens.push_back(".");
      } else if (c == '.') {
        tokens.push_back("...");
      } else if (c == '-') {
        tokens.push_back(run == 1 ? "-" : "--");
      } else {
        tokens.push_back(text.substr(i, run));
      }
      i = j;
    } else if (c == '\'') {
      const size_t clitic = standalone_clitic(text, i);
      const size_t length = clitic > 0 ? clitic : (i + 1 < n && text[i + 1] == '\'' ? 2 : 1);
      tokens.push_back(text.substr(i, length));
      i += length;
    } else {
      const auto it = kSymbolTokens.find(c);
      tokens.push_back(it == kSymbolTokens.end() ? std::string(1, c) : it->second);
      ++i;
    }
  }
  return tokens;
}

}  // namespace

std::vector<std::string> ptb_tokenize(const std::string& caption) {
  std::vector<std::string> kept;
  for (auto& token : scan(fold(caption))) {
    if (kRemovedTokens.count(token) == 0) kept.push_back(std::move(token));
  }
  return kept;
}

}  // namespace saccade
