// A read position that hand-written matchers step through text with (not part of the public API).
//
// The config code checks a few text patterns (YAML's numbers, override keys, timestamps). It
// does so with these loops rather than std::regex: libstdc++'s regex executor recurses once per
// character it matches, so a long value (a 40,000-character override, a 100,000-digit YAML
// scalar) overflowed the stack. Each matcher takes the longest run a pattern allows, which gives
// the regex's answer wherever what may follow a run cannot continue it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>

namespace saccade::config_detail {

inline bool is_ascii_digit(char c) {
  return c >= '0' && c <= '9';
}

inline bool is_ascii_letter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// isspace() in the C locale, as std::regex's \s was: space, \t, \n, \v, \f, \r.
inline bool is_ascii_space(char c) {
  return c == ' ' || (c >= '\t' && c <= '\r');
}

inline bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

// A predicate on characters: whether `chars` holds one.
inline auto one_of(std::string_view chars) {
  return [chars](char c) { return chars.find(c) != std::string_view::npos; };
}

class TextCursor {
 public:
  explicit TextCursor(std::string_view text, size_t pos = 0)
      : text_(text), pos_(std::min(pos, text.size())) {}

  bool at_end() const { return pos_ == text_.size(); }
  size_t pos() const { return pos_; }
  std::string_view rest() const { return text_.substr(pos_); }

  // Steps over one character that `accepts`; false, without moving, otherwise.
  template <typename Predicate>
  bool take_if(Predicate accepts) {
    if (at_end() || !accepts(text_[pos_])) return false;
    ++pos_;
    return true;
  }

  bool take(char wanted) {
    return take_if([wanted](char c) { return c == wanted; });
  }

  bool take_one_of(std::string_view chars) { return take_if(one_of(chars)); }

  // Whether the next character is one `accepts` (false at the end); does not move.
  template <typename Predicate>
  bool next_is(Predicate accepts) const {
    return !at_end() && accepts(text_[pos_]);
  }

  // Steps over the longest run, of at most `most` characters, that `accepts`; its length.
  template <typename Predicate>
  size_t take_while(Predicate accepts, size_t most = std::string_view::npos) {
    const size_t start = pos_;
    while (pos_ - start < most && take_if(accepts)) {
    }
    return pos_ - start;
  }

  // Steps over `word` (ASCII letters in any case when `ignore_case`); false, without moving,
  // when the text does not go on with it.
  bool take_word(std::string_view word, bool ignore_case = false) {
    if (text_.size() - pos_ < word.size()) return false;
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    for (size_t i = 0; i < word.size(); ++i) {
      const char c = text_[pos_ + i];
      if (c != word[i] && !(ignore_case && lower(c) == lower(word[i]))) return false;
    }
    pos_ += word.size();
    return true;
  }

  // `[0-9](_?[0-9])*`: digits, with single underscores between two of them.
  bool take_grouped_digits() {
    if (!take_if(is_ascii_digit)) return false;
    while (true) {
      if (take_if(is_ascii_digit)) continue;
      if (pos_ + 1 < text_.size() && text_[pos_] == '_' && is_ascii_digit(text_[pos_ + 1])) {
        pos_ += 2;
        continue;
      }
      return true;
    }
  }

 private:
  std::string_view text_;
  size_t pos_;
};

}  // namespace saccade::config_detail
