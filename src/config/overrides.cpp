// Hydra 1.3 override grammar: a recursive-descent parser over the override text.
#include "config/overrides.h"

#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string_view>

#include "base/text.h"
#include "config/config.h"
#include "config/interpolation.h"
#include "config/override_functions.h"
#include "config/text_cursor.h"
#include "config/yaml_tree.h"

namespace saccade::config_detail {
namespace {

const char kWhitespace[] = " \t";
// Characters a backslash escapes in unquoted values.
const std::string kEscapable = "\\()[]{}:=, \t";
// The characters the grammar's lexer takes in unquoted text besides the delimiters, escapes and
// interpolations (ID, UNQUOTED_CHAR, COLON and WS tokens): ASCII letters and digits, _ - / + . $
// % * @ ? | \ : and blanks. Hydra and OmegaConf refuse any other, non-ASCII letters included.
bool is_unquoted_char(char c) {
  const auto byte = static_cast<unsigned char>(c);
  return byte < 0x80 &&
         (std::isalnum(byte) || std::string_view("_-/+.$%*@?|\\: \t").find(c) != std::string_view::npos);
}

// The UTF-8 character starting at `at` of valid UTF-8 text, whole (ConfigError escapes a control
// character).
std::string utf8_character_at(const std::string& text, size_t at) {
  return text.substr(
      at, utf8_sequence_length(reinterpret_cast<const unsigned char*>(text.data()) + at, text.size() - at));
}

std::string unescape(const std::string& raw) {
  std::string out;
  for (size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\\' && i + 1 < raw.size() && kEscapable.find(raw[i + 1]) != std::string::npos) ++i;
    out += raw[i];
  }
  return out;
}

// Hydra's quoted strings: a run of backslashes before a quote (or before the closing quote)
// is halved, an odd one escaping the quote; other backslashes are literal.
std::string unquote(const std::string& body, char quote) {
  std::string out;
  size_t i = 0;
  while (i < body.size()) {
    if (body[i] != '\\') {
      out += body[i++];
      continue;
    }
    size_t run = 0;
    while (i + run < body.size() && body[i + run] == '\\') ++run;
    const bool before_quote = i + run == body.size() || body[i + run] == quote;
    out.append(before_quote ? run / 2 : run, '\\');
    i += run;
    if (before_quote && run % 2 == 1) out += body[i++];
  }
  return out;
}

// `0|[1-9](_?[0-9])*`: the grammar's unsigned decimal integer.
bool take_grammar_int(TextCursor& cursor) {
  if (cursor.take('0')) return true;
  return cursor.next_is(one_of("123456789")) && cursor.take_grouped_digits();
}

bool is_grammar_int(std::string_view text) {
  TextCursor cursor(text);
  cursor.take_one_of("+-");
  return take_grammar_int(cursor) && cursor.at_end();
}

// The grammar's float: [+-]?(POINT|(INT|POINT)[eE][+-]?[0-9](_?[0-9])*|inf|nan), inf and nan in
// any case, where POINT is INT\. or INT?\.[0-9](_?[0-9])*.
bool is_grammar_float(std::string_view text) {
  TextCursor cursor(text);
  cursor.take_one_of("+-");
  if (cursor.take_word("inf", true) || cursor.take_word("nan", true)) return cursor.at_end();
  const bool whole = take_grammar_int(cursor);
  const bool point = cursor.take('.');
  const bool fraction = point && cursor.take_grouped_digits();
  if (!whole && !fraction) return false;
  if (cursor.take_one_of("eE")) {
    cursor.take_one_of("+-");
    return cursor.take_grouped_digits() && cursor.at_end();
  }
  return point && cursor.at_end();
}

bool is_word_in_any_case(std::string_view text, std::string_view word) {
  return text.size() == word.size() && TextCursor(text).take_word(word, true);
}

// `[A-Za-z_$][A-Za-z0-9_$-]*` or `[0-9]+`: one segment of a key or package.
bool take_key_segment(TextCursor& cursor) {
  if (cursor.take_if([](char c) { return is_ascii_letter(c) || c == '_' || c == '$'; })) {
    cursor.take_while([](char c) { return is_ascii_letter(c) || is_ascii_digit(c) || one_of("_$-")(c); });
    return true;
  }
  return cursor.take_while(is_ascii_digit) > 0;
}

// How many segments `text` joins with one of `separators` (the same one throughout); 0 when it is
// not such a list.
size_t count_key_segments(std::string_view text, std::string_view separators) {
  TextCursor cursor(text);
  if (!take_key_segment(cursor)) return 0;
  size_t count = 1;
  const char separator = cursor.at_end() ? separators[0] : cursor.rest()[0];
  if (separators.find(separator) == std::string_view::npos) return 0;
  for (; cursor.take(separator); ++count) {
    if (!take_key_segment(cursor)) return 0;
  }
  return cursor.at_end() ? count : 0;
}

// A key is segments joined by dots, or a group path by slashes; a package is dotted or empty.
// Each segment is a level of the config tree, which merging, printing and resolving recurse
// through: there may be no more than a YAML file may nest.
void check_key(const std::string& input, const std::string& key, const std::optional<std::string>& package) {
  const size_t key_levels = count_key_segments(key, "./");
  if (key_levels == 0) fail_override(input, "invalid key '" + key + "'");
  const bool has_package = package && !package->empty();
  const size_t package_levels = has_package ? count_key_segments(*package, ".") : 0;
  if (has_package && package_levels == 0) fail_override(input, "invalid package '" + *package + "'");
  const auto check_levels = [&input](size_t levels, const std::string& what) {
    if (levels <= static_cast<size_t>(kMaxYamlDepth)) return;
    fail_override(
        input, what + " nests " + std::to_string(levels) + " levels, more than the " +
                   std::to_string(kMaxYamlDepth) + " allowed");
  };
  check_levels(key_levels, "the key");
  check_levels(package_levels, "the package");
}

// Where an element may stop, besides the end of the text.
enum class Context { kTop, kList, kDictKey, kDictValue, kFunctionArg };

class ValueParser {
 public:
  ValueParser(const std::string& text, size_t pos, const std::string& input)
      : text_(text), pos_(pos), input_(input) {}

  // The whole value: one element or a simple sweep `a,b,...`.
  void parse_value(Override& out) {
    skip_ws();
    if (at_end()) {
      out.value = string_node("");
      return;
    }
    OverrideElement first = parse_element(Context::kTop);
    skip_ws();
    if (!at_end() && peek() == ',') {
      out.sweep = SweepKind::kSimple;
      out.sweep_values.push_back(first.text);
      while (!at_end() && peek() == ',') {
        ++pos_;
        skip_ws();
        OverrideElement next = parse_element(Context::kTop);
        if (first.sweep != SweepKind::kNone || next.sweep != SweepKind::kNone)
          fail("sweeps cannot be nested");
        out.sweep_values.push_back(next.text);
        skip_ws();
      }
    } else {
      out.sweep = first.sweep;
      for (const SweepItem& item : first.items) out.sweep_values.push_back(item.text);
      out.glob = first.glob;
      out.value = first.node;
    }
    expect_end();
  }

  YAML::Node parse_single_element() {
    skip_ws();
    if (at_end()) return string_node("");
    OverrideElement element = parse_element(Context::kTop);
    if (element.sweep != SweepKind::kNone) fail("sweeps are not allowed here");
    skip_ws();
    expect_end();
    return element.node;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const { fail_override(input_, reason); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++pos_;
  }
  void expect_end() const {
    if (!at_end()) fail(std::string("unexpected '") + peek() + "'");
  }

  // `end` less the unescaped blanks before it, not going below `begin`: a blank is escaped by an
  // odd run of backslashes before it, so one after an escaped backslash is trimmed.
  size_t trimmed_end(size_t begin, size_t end) const {
    const auto escaped = [&](size_t at) {
      size_t run = 0;
      while (at > begin + run && text_[at - 1 - run] == '\\') ++run;
      return run % 2 == 1;
    };
    while (end > begin && (text_[end - 1] == ' ' || text_[end - 1] == '\t') && !escaped(end - 1)) --end;
    return end;
  }

  // The name of `name(` (a function call) or `name=` (a named argument) at pos_: an identifier,
  // blanks, then `delimiter`, which pos_ moves past. "" (pos_ unchanged) when there is none.
  std::string take_name_before(char delimiter, bool dash_allowed) {
    TextCursor cursor(text_, pos_);
    if (!cursor.take_if([](char c) { return is_ascii_letter(c) || c == '_'; })) return "";
    cursor.take_while([dash_allowed](char c) {
      return is_ascii_letter(c) || is_ascii_digit(c) || c == '_' || (dash_allowed && c == '-');
    });
    std::string name = text_.substr(pos_, cursor.pos() - pos_);
    cursor.take_while(is_blank);
    if (!cursor.take(delimiter)) return "";
    pos_ = cursor.pos();
    return name;
  }

  OverrideElement parse_element(Context context) {
    // Lists, dicts and function calls nest by recursion: as deep as a YAML file may nest, no deeper.
    if (++depth_ > kMaxYamlDepth)
      fail("the value nests deeper than " + std::to_string(kMaxYamlDepth) + " levels");
    OverrideElement element;
    const size_t begin = pos_;
    if (at_end()) {
      fail("missing value");
    } else if (peek() == '[') {
      element.node = parse_list();
    } else if (peek() == '{') {
      element.node = parse_dict();
    } else if (peek() == '\'' || peek() == '"') {
      element.node = parse_quoted();
    } else if (const std::string name = take_name_before('(', true); !name.empty()) {
      element = parse_function(name);
    } else {
      element.node = parse_primitive(context);
    }
    element.text = text_.substr(begin, trimmed_end(begin, pos_) - begin);  // as a job gets it
    --depth_;
    return element;
  }

  YAML::Node parse_list() {
    YAML::Node list(YAML::NodeType::Sequence);
    ++pos_;
    skip_ws();
    if (!at_end() && peek() == ']') {
      ++pos_;
      return list;
    }
    while (true) {
      list.push_back(nested(parse_element(Context::kList)));
      skip_ws();
      if (at_end()) fail("missing ']'");
      if (peek() == ']') break;
      if (peek() != ',') fail(std::string("unexpected '") + peek() + "' in list");
      ++pos_;
      skip_ws();
    }
    ++pos_;
    return list;
  }

  YAML::Node parse_dict() {
    YAML::Node dict(YAML::NodeType::Map);
    ++pos_;
    skip_ws();
    if (!at_end() && peek() == '}') {
      ++pos_;
      return dict;
    }
    while (true) {
      const YAML::Node key = parse_primitive(Context::kDictKey);
      if (at_end() || peek() != ':') fail("missing ':' in dict");
      ++pos_;
      skip_ws();
      dict[key.Scalar()] = nested(parse_element(Context::kDictValue));
      skip_ws();
      if (at_end()) fail("missing '}'");
      if (peek() == '}') break;
      if (peek() != ',') fail(std::string("unexpected '") + peek() + "' in dict");
      ++pos_;
      skip_ws();
    }
    ++pos_;
    return dict;
  }

  YAML::Node nested(const OverrideElement& element) const {
    if (element.sweep != SweepKind::kNone) fail("sweeps cannot be nested");
    return element.node;
  }

  YAML::Node parse_quoted() {
    const char quote = peek();
    size_t i = pos_ + 1;
    while (true) {
      size_t run = 0;
      while (i + run < text_.size() && text_[i + run] == '\\') ++run;
      i += run;
      if (i >= text_.size()) fail("unterminated quoted string");
      if (text_[i] == quote && run % 2 == 0) break;
      ++i;
    }
    const std::string body = text_.substr(pos_ + 1, i - pos_ - 1);
    pos_ = i + 1;
    return string_node(unquote(body, quote));
  }

  // Unquoted text up to the next delimiter of `context`; `${...}` is taken whole.
  YAML::Node parse_primitive(Context context) {
    const size_t begin = pos_;
    while (!at_end()) {
      const char c = peek();
      if (c == '\\' && pos_ + 1 < text_.size() && kEscapable.find(text_[pos_ + 1]) != std::string::npos) {
        pos_ += 2;
      } else if (c == '$' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '{') {
        skip_interpolation();
      } else if (c == ',' || c == ']' || c == '}' || c == ')' || (c == ':' && context == Context::kDictKey)) {
        break;
      } else if (c == '[' || c == '{' || c == '(' || c == '=' || c == '\'' || c == '"') {
        fail(std::string("unexpected '") + c + "'");
      } else if (is_unquoted_char(c)) {
        ++pos_;
      } else {
        fail(
            "token recognition error at: '" + utf8_character_at(text_, pos_) +
            "' (quote a value holding it)");
      }
    }
    // Without the blanks at either end (an escaped one at the end stays).
    const size_t first = text_.find_first_not_of(kWhitespace, begin);
    if (first == std::string::npos || first >= pos_) fail("missing value");
    const size_t last = trimmed_end(first, pos_);
    const std::string raw = text_.substr(first, last - first);
    if (context == Context::kDictKey) return YAML::Node(unescape(raw));
    const YAML::Node typed = typed_primitive(raw);
    return typed.IsDefined() ? typed : string_node(unescape(raw));
  }

  void skip_interpolation() {
    const size_t end = interpolation_end(text_, pos_);
    if (end == std::string::npos) fail("unterminated interpolation");
    pos_ = end;
  }

  // A function call, after its "name(": the arguments up to the closing ')'.
  OverrideElement parse_function(const std::string& name) {
    FunctionArgs args;
    skip_ws();
    bool named_seen = false;
    while (!at_end() && peek() != ')') {
      const std::string arg_name = take_name_before('=', false);
      skip_ws();  // after the '='
      if (arg_name.empty() && named_seen) fail(name + "() takes a value by position after a named one");
      named_seen |= !arg_name.empty();
      args.emplace_back(arg_name, parse_element(Context::kFunctionArg));
      skip_ws();
      if (at_end() || peek() == ')') break;
      if (peek() != ',') fail(std::string("unexpected '") + peek() + "' in the arguments of " + name + "()");
      ++pos_;
      skip_ws();
      if (!at_end() && peek() == ')') fail(name + "() has a ',' with no argument after it");
    }
    if (at_end()) fail("missing ')'");
    ++pos_;
    return call_override_function(name, args, input_);
  }

  const std::string& text_;
  size_t pos_;
  int depth_ = 0;  // of the element being parsed
  const std::string& input_;
};

}  // namespace

YAML::Node typed_primitive(const std::string& text) {
  if (is_word_in_any_case(text, "null")) return YAML::Node(YAML::NodeType::Null);
  if (is_word_in_any_case(text, "true")) return YAML::Node("true");
  if (is_word_in_any_case(text, "false")) return YAML::Node("false");
  if (is_grammar_int(text)) return YAML::Node(scalar_text(YAML::Node(text)));
  if (is_grammar_float(text)) return YAML::Node(format_float(*parse_float(text), true));
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string Override::key_element() const {
  std::string prefix;
  switch (kind) {
    case OverrideKind::kDelete:
      prefix = "~";
      break;
    case OverrideKind::kAdd:
      prefix = "+";
      break;
    case OverrideKind::kForceAdd:
      prefix = "++";
      break;
    case OverrideKind::kChange:
      break;
  }
  return prefix + key + (package ? "@" + *package : "");
}

Override parse_override(const std::string& text) {
  // A config is UTF-8 text: raw bytes would be copied into config.yaml and every record.
  if (const size_t at = invalid_utf8_at(text); at != std::string::npos) {
    std::string shown;
    for (const char c : text) {
      const auto byte = static_cast<unsigned char>(c);
      char escaped[8];
      std::snprintf(escaped, sizeof(escaped), "\\x%02X", byte);
      shown += byte < 0x20 || byte >= 0x7F ? std::string(escaped) : std::string(1, c);
    }
    throw ConfigError(
        "Override '" + shown + "' is not valid UTF-8 (at byte " + std::to_string(at) +
        "); pass text in UTF-8");
  }
  Override out;
  out.input = text;
  size_t pos = 0;
  if (text.rfind("~", 0) == 0) {
    out.kind = OverrideKind::kDelete;
    pos = 1;
  } else if (text.rfind("++", 0) == 0) {
    out.kind = OverrideKind::kForceAdd;
    pos = 2;
  } else if (text.rfind("+", 0) == 0) {
    out.kind = OverrideKind::kAdd;
    pos = 1;
  }
  const size_t equal = text.find('=', pos);
  std::string key = text.substr(pos, equal == std::string::npos ? std::string::npos : equal - pos);
  const auto fail = [&](const std::string& reason) {
    throw ConfigError("Error parsing override '" + text + "': " + reason);
  };
  if (equal == std::string::npos && out.kind != OverrideKind::kDelete) fail("missing '='");
  const size_t at = key.find('@');
  if (at != std::string::npos) {
    out.package = key.substr(at + 1);
    key = key.substr(0, at);
  }
  check_key(text, key, out.package);
  out.key = key;
  if (equal == std::string::npos) return out;
  if (out.kind == OverrideKind::kDelete &&
      text.find_first_not_of(kWhitespace, equal + 1) == std::string::npos) {
    return out;
  }
  out.has_value = true;
  ValueParser(text, equal + 1, text).parse_value(out);
  return out;
}

std::string escape_special_characters(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (kEscapable.find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

YAML::Node parse_value_element(const std::string& text) {
  return ValueParser(text, 0, text).parse_single_element();
}

}  // namespace saccade::config_detail
