// yaml-cpp tree helpers: OmegaConf scalar typing, Python/PyYAML text, merge, key search, emission.
#include "config/yaml_tree.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include <yaml-cpp/depthguard.h>  // YAML::DeepRecursion, which yaml.h leaves out

#include "base/text.h"
#include "config/config.h"
#include "config/text_cursor.h"

namespace saccade::config_detail {
namespace {

// PyYAML's YAML 1.1 int resolver, underscores allowed: [-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|
// 0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+): binary, octal, decimal, hex, sexagesimal.
bool looks_like_int(const std::string& text) {
  TextCursor cursor(text);
  cursor.take_one_of("-+");
  if (cursor.take_word("0b")) return cursor.take_while(one_of("01_")) > 0 && cursor.at_end();
  if (cursor.take_word("0x"))
    return cursor.take_while(one_of("0123456789abcdefABCDEF_")) > 0 && cursor.at_end();
  if (cursor.take('0')) {
    cursor.take_while(one_of("01234567_"));
    return cursor.at_end();
  }
  if (!cursor.take_one_of("123456789")) return false;
  cursor.take_while(one_of("0123456789_"));
  while (cursor.take(':')) {
    // [0-5]?[0-9]: a second digit only after a first of 0-5.
    if (cursor.take_one_of("012345")) {
      cursor.take_if(is_ascii_digit);
    } else if (!cursor.take_if(is_ascii_digit)) {
      return false;
    }
  }
  return cursor.at_end();
}

// OmegaConf's float resolver, which unlike YAML 1.1 also takes "1e-3" (no dot):
// [-+]?([0-9][0-9_]*\.[0-9_]*([eE][-+]?[0-9]+)?|[0-9][0-9_]*[eE][-+]?[0-9]+)
// |\.[0-9_]+([eE][-+][0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)
bool looks_like_float(const std::string& text) {
  const auto digit_or_underscore = one_of("0123456789_");
  TextCursor cursor(text);
  const bool sign = cursor.take_one_of("-+");
  if (cursor.take('.')) {
    if (cursor.take_word("inf") || cursor.take_word("Inf") || cursor.take_word("INF")) return cursor.at_end();
    if (sign) return false;  // only .inf takes one
    if (cursor.take_word("nan") || cursor.take_word("NaN") || cursor.take_word("NAN")) return cursor.at_end();
    if (cursor.take_while(digit_or_underscore) == 0) return false;
    if (cursor.take_one_of("eE") && !(cursor.take_one_of("-+") && cursor.take_while(is_ascii_digit) > 0))
      return false;
    return cursor.at_end();
  }
  if (!cursor.take_if(is_ascii_digit)) return false;
  cursor.take_while(digit_or_underscore);
  const bool point = cursor.take('.');
  if (point) cursor.take_while(digit_or_underscore);
  if (cursor.take_one_of("eE")) {
    cursor.take_one_of("-+");
    return cursor.take_while(is_ascii_digit) > 0 && cursor.at_end();
  }
  return point && cursor.at_end();
}

bool is_yaml_bool_word(const std::string& text) {
  static const char* const kWords[] = {"yes",   "Yes",   "YES",   "no", "No", "NO", "true", "True", "TRUE",
                                       "false", "False", "FALSE", "on", "On", "ON", "off",  "Off",  "OFF"};
  return std::find(std::begin(kWords), std::end(kWords), text) != std::end(kWords);
}

std::string without_underscores(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c != '_') out += c;
  }
  return out;
}

std::optional<long long> parse_digits(const std::string& digits, int base) {
  long long value = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value, base);
  if (ec != std::errc() || ptr != end || digits.empty()) return std::nullopt;
  return value;
}

// A decimal number's text, sign and all but no '+' or underscores, as a double; nullopt when the
// text is not all one number. Beyond the doubles, Python's float() (so Hydra) gives +-inf, or 0
// below the subnormals: strtod's saturated result.
std::optional<double> decimal_value(const std::string& digits) {
  double value = 0;
  const char* end = digits.data() + digits.size();
  const auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  if (digits.empty() || ptr != end || (ec != std::errc() && ec != std::errc::result_out_of_range))
    return std::nullopt;
  if (ec == std::errc::result_out_of_range) value = std::strtod(digits.c_str(), nullptr);
  return value;
}

std::string lower(std::string text) {
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

// True when Python's float() accepts the text: PyYAML then quotes it (OmegaConf's dumper). In
// any case: \s*[+-]?(((\d(_?\d)*)?\.\d(_?\d)*|\d(_?\d)*\.?)(e[+-]?\d(_?\d)*)?|inf|infinity|nan)\s*
bool python_parses_as_number(const std::string& text) {
  TextCursor cursor(text);
  cursor.take_while(is_ascii_space);
  cursor.take_one_of("+-");
  if (!(cursor.take_word("infinity", true) || cursor.take_word("inf", true) ||
        cursor.take_word("nan", true))) {
    const bool whole = cursor.take_grouped_digits();
    const bool fraction = cursor.take('.') && cursor.take_grouped_digits();
    if (!whole && !fraction) return false;
    if (cursor.take_one_of("eE")) {
      cursor.take_one_of("+-");
      if (!cursor.take_grouped_digits()) return false;
    }
  }
  cursor.take_while(is_ascii_space);
  return cursor.at_end();
}

// YAML 1.1's timestamp: [0-9]{4}-[0-9]{2}-[0-9]{2}, or [0-9]{4}-[0-9]{1,2}-[0-9]{1,2}([Tt]|[ \t]+)
// [0-9]{1,2}:[0-9]{2}:[0-9]{2}(\.[0-9]*)?([ \t]*(Z|[-+][0-9]{1,2}(:[0-9]{2})?))?
bool looks_like_timestamp(const std::string& text) {
  TextCursor cursor(text);
  const auto digits = [&cursor](size_t fewest, size_t most) {
    return cursor.take_while(is_ascii_digit, most) >= fewest;
  };
  if (!(digits(4, 4) && cursor.take('-'))) return false;
  const size_t month = cursor.take_while(is_ascii_digit, 2);
  if (month == 0 || !cursor.take('-')) return false;
  const size_t day = cursor.take_while(is_ascii_digit, 2);
  if (day == 0) return false;
  if (cursor.at_end()) return month == 2 && day == 2;
  if (!cursor.take_one_of("Tt") && cursor.take_while(is_blank) == 0) return false;
  if (!(digits(1, 2) && cursor.take(':') && digits(2, 2) && cursor.take(':') && digits(2, 2))) return false;
  if (cursor.take('.')) cursor.take_while(is_ascii_digit);
  if (cursor.at_end()) return true;
  cursor.take_while(is_blank);
  if (cursor.take('Z')) return cursor.at_end();
  if (!(cursor.take_one_of("-+") && digits(1, 2))) return false;
  if (cursor.take(':') && !digits(2, 2)) return false;
  return cursor.at_end();
}

// Plain text that PyYAML's dumper would resolve to something other than a string.
bool resolves_as_non_string(const std::string& text) {
  static const char* const kOtherWords[] = {"y", "Y", "n", "N", "~", "null", "Null", "NULL", "=", "<<"};
  return is_yaml_bool_word(text) ||
         std::find(std::begin(kOtherWords), std::end(kOtherWords), text) != std::end(kOtherWords) ||
         python_parses_as_number(text) || looks_like_int(text) || looks_like_float(text) ||
         looks_like_timestamp(text);
}

// PyYAML's analyze_scalar for the block context: whether the text may be written unquoted.
bool plain_allowed(const std::string& text) {
  if (text.empty() || text.front() == ' ' || text.back() == ' ') return false;
  if (text.rfind("---", 0) == 0 || text.rfind("...", 0) == 0) return false;
  const auto followed_by_space = [&](size_t i) { return i + 1 == text.size() || text[i + 1] == ' '; };
  if (std::string("#,[]{}&*!|>'\"%@`").find(text.front()) != std::string::npos) return false;
  if ((text.front() == '?' || text.front() == '-') && followed_by_space(0)) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == ':' && followed_by_space(i)) return false;
    if (text[i] == '#' && i > 0 && text[i - 1] == ' ') return false;
  }
  return true;
}

bool has_control_chars(const std::string& text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

std::string yaml_string(const std::string& text) {
  if (has_control_chars(text)) return double_quoted(text);
  if (!resolves_as_non_string(text) && plain_allowed(text)) return text;
  std::string out = "'";
  for (char c : text) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

std::string python_repr(const YAML::Node& node) {
  if (node.IsScalar() && scalar_kind(node) == ScalarKind::kString) {
    const std::string& text = node.Scalar();
    const bool use_double = text.find('\'') != std::string::npos && text.find('"') == std::string::npos;
    const char quote = use_double ? '"' : '\'';
    std::string out(1, quote);
    for (char c : text) {
      if (c == '\\' || c == quote) out += '\\';
      out += c;
    }
    return out + quote;
  }
  return python_str(node);
}

std::string flow_scalar(const YAML::Node& node) {
  if (!node || node.IsNull()) return "null";
  if (node.IsMap()) return "{}";
  if (node.IsSequence()) return "[]";
  return scalar_kind(node) == ScalarKind::kString ? yaml_string(node.Scalar()) : scalar_text(node);
}

bool is_block(const YAML::Node& node) {
  return (node.IsMap() || node.IsSequence()) && node.size() > 0;
}

void emit_map(const YAML::Node& map, int indent, bool first_inline, std::string& out);
void emit_sequence(const YAML::Node& sequence, int indent, bool first_inline, std::string& out);

// The value after "key:", at the key's indentation. Like PyYAML, a sequence under a key is not
// indented, a mapping is indented by two.
void emit_value(const YAML::Node& value, int indent, std::string& out) {
  if (!is_block(value)) {
    out += " " + flow_scalar(value) + "\n";
  } else if (value.IsMap()) {
    out += "\n";
    emit_map(value, indent + 2, false, out);
  } else {
    out += "\n";
    emit_sequence(value, indent, false, out);
  }
}

void emit_map(const YAML::Node& map, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (auto it = map.begin(); it != map.end(); ++it) {
    if (!(first && first_inline)) out.append(indent, ' ');
    first = false;
    out += yaml_string(it->first.Scalar()) + ":";
    emit_value(it->second, indent, out);
  }
}

void emit_sequence(const YAML::Node& sequence, int indent, bool first_inline, std::string& out) {
  bool first = true;
  for (const auto& item : sequence) {
    if (!(first && first_inline)) out.append(indent, ' ');
    first = false;
    out += "-";
    if (!is_block(item)) {
      out += " " + flow_scalar(item) + "\n";
    } else if (item.IsMap()) {
      out += " ";
      emit_map(item, indent + 2, true, out);
    } else {
      out += " ";
      emit_sequence(item, indent + 2, true, out);
    }
  }
}

void collect_keys(const YAML::Node& map, const std::string& prefix, std::vector<std::string>& out) {
  for (auto it = map.begin(); it != map.end(); ++it) {
    const std::string key = prefix.empty() ? it->first.Scalar() : prefix + "." + it->first.Scalar();
    out.push_back(key);
    if (it->second.IsMap()) collect_keys(it->second, key, out);
  }
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

ScalarKind scalar_kind(const YAML::Node& node) {
  if (!node || node.IsNull()) return ScalarKind::kNull;
  const std::string& tag = node.Tag();
  if (tag != "?" && tag != "" && tag != "tag:yaml.org,2002:int" && tag != "tag:yaml.org,2002:float" &&
      tag != "tag:yaml.org,2002:bool") {
    return ScalarKind::kString;
  }
  const std::string& text = node.Scalar();
  if (is_yaml_bool_word(text)) return ScalarKind::kBool;
  if (looks_like_int(text)) return ScalarKind::kInt;
  if (looks_like_float(text) && parse_float(text)) return ScalarKind::kFloat;
  return ScalarKind::kString;
}

bool is_missing(const YAML::Node& node) {
  return node && node.IsScalar() && node.Scalar() == "???";
}

bool is_interpolation(const YAML::Node& node) {
  return node && node.IsScalar() && scalar_kind(node) == ScalarKind::kString &&
         node.Scalar().find("${") != std::string::npos;
}

YAML::Node string_node(const std::string& text) {
  YAML::Node node(text);
  node.SetTag("!");
  return node;
}

void check_expanded_size(const YAML::Node& root, const std::string& where) {
  int64_t budget = kMaxYamlValues;
  const std::function<void(const YAML::Node&, int)> visit = [&](const YAML::Node& node, int depth) {
    if (--budget < 0) {
      throw ConfigError(
          where + ": the YAML expands to more than " + std::to_string(kMaxYamlValues) +
          " values (aliases that repeat aliases); a config holds a few hundred");
    }
    if (depth > kMaxYamlDepth) {
      throw ConfigError(
          where + ": the YAML nests deeper than " + std::to_string(kMaxYamlDepth) +
          " levels (an alias inside its own anchor?)");
    }
    if (node.IsSequence()) {
      for (const auto& item : node) visit(item, depth + 1);
    } else if (node.IsMap()) {
      for (auto it = node.begin(); it != node.end(); ++it) visit(it->second, depth + 1);
    }
  };
  visit(root, 0);
}

YAML::Node parse_yaml(const std::string& text, const std::string& where) {
  try {
    return YAML::Load(text);
  } catch (const YAML::DeepRecursion& error) {
    throw ConfigError(
        where + ":" + std::to_string(error.mark.line + 1) + ": the YAML nests too deep (yaml-cpp stops at " +
        std::to_string(error.depth()) + " levels)");
  } catch (const YAML::ParserException& error) {
    throw ConfigError(where + ":" + std::to_string(error.mark.line + 1) + ": " + error.msg);
  }
}

std::optional<bool> parse_bool(const std::string& text) {
  const std::string word = lower(text);
  if (word == "true" || word == "yes" || word == "on") return true;
  if (word == "false" || word == "no" || word == "off") return false;
  return std::nullopt;
}

std::optional<long long> parse_int(const std::string& text) {
  if (!looks_like_int(text)) return std::nullopt;
  std::string digits = without_underscores(text);
  const bool negative = digits[0] == '-';
  if (digits[0] == '-' || digits[0] == '+') digits.erase(0, 1);
  std::optional<long long> value;
  if (digits.find(':') != std::string::npos) {  // sexagesimal, e.g. 1:30 = 90
    value = 0;
    size_t start = 0;
    while (value && start <= digits.size()) {
      const size_t colon = std::min(digits.find(':', start), digits.size());
      const auto part = parse_digits(digits.substr(start, colon - start), 10);
      value = part ? std::optional<long long>(*value * 60 + *part) : std::nullopt;
      start = colon + 1;
    }
  } else if (digits.rfind("0b", 0) == 0) {
    value = parse_digits(digits.substr(2), 2);
  } else if (digits.rfind("0x", 0) == 0) {
    value = parse_digits(digits.substr(2), 16);
  } else if (digits.size() > 1 && digits[0] == '0') {
    value = parse_digits(digits.substr(1), 8);
  } else {
    value = parse_digits(digits, 10);
  }
  if (value && negative) *value = -*value;
  return value;
}

std::optional<double> parse_float(const std::string& text) {
  const std::string word = lower(text);
  const bool negative = !word.empty() && word[0] == '-';
  const std::string unsigned_word =
      (!word.empty() && (word[0] == '-' || word[0] == '+')) ? word.substr(1) : word;
  if (unsigned_word == ".inf" || unsigned_word == "inf") return negative ? -INFINITY : INFINITY;
  if (unsigned_word == ".nan" || unsigned_word == "nan") return NAN;
  if (const auto integer = parse_int(text)) return static_cast<double>(*integer);
  std::string digits = without_underscores(text);
  if (!digits.empty() && digits[0] == '+') digits.erase(0, 1);
  return decimal_value(digits);
}

std::optional<long long> python_int(const std::string& text) {
  // \s*[+-]?[0-9](_?[0-9])*\s*
  TextCursor cursor(text);
  cursor.take_while(is_ascii_space);
  cursor.take_one_of("+-");
  if (!cursor.take_grouped_digits()) return std::nullopt;
  cursor.take_while(is_ascii_space);
  if (!cursor.at_end()) return std::nullopt;
  std::string digits;
  for (const char c : text) {
    if (c != '_' && c != '+' && !std::isspace(static_cast<unsigned char>(c))) digits += c;
  }
  return parse_digits(digits, 10);
}

std::optional<double> python_float(const std::string& text) {
  if (!python_parses_as_number(text)) return std::nullopt;
  std::string word;
  for (const char c : lower(text)) {
    if (c != '_' && !std::isspace(static_cast<unsigned char>(c))) word += c;
  }
  const bool negative = word[0] == '-';
  if (word[0] == '-' || word[0] == '+') word.erase(0, 1);
  if (word == "inf" || word == "infinity") return negative ? -INFINITY : INFINITY;
  if (word == "nan") return NAN;
  const auto value = decimal_value(word);
  if (!value) return std::nullopt;
  return negative ? -*value : *value;
}

std::string format_float(double value, bool yaml_style) {
  if (std::isnan(value)) return yaml_style ? ".nan" : "nan";
  if (std::isinf(value)) {
    if (value > 0) return yaml_style ? ".inf" : "inf";
    return yaml_style ? "-.inf" : "-inf";
  }
  // Shortest round-trip digits, then Python's repr layout: positional unless the decimal
  // exponent is < -4 or >= 16.
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const std::string text(buffer, result.ptr);
  const size_t e = text.find('e');
  std::string mantissa = text.substr(0, e);
  const int exponent = std::stoi(text.substr(e + 1));
  std::string sign;
  if (mantissa[0] == '-') {
    sign = "-";
    mantissa.erase(0, 1);
  }
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  const int point = exponent + 1;  // digits before the decimal point
  const int count = static_cast<int>(digits.size());
  std::string out;
  if (point > -4 && point <= 16) {
    if (point <= 0) {
      out = "0." + std::string(-point, '0') + digits;
    } else if (point >= count) {
      out = digits + std::string(point - count, '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  } else {
    char exp_text[16];
    std::snprintf(exp_text, sizeof(exp_text), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out = digits.substr(0, 1) + (count > 1 ? "." + digits.substr(1) : (yaml_style ? ".0" : "")) + exp_text;
  }
  return sign + out;
}

std::string scalar_text(const YAML::Node& node) {
  const std::string& text = node.Scalar();
  switch (scalar_kind(node)) {
    case ScalarKind::kNull:
      return "null";
    case ScalarKind::kBool:
      return *parse_bool(text) ? "true" : "false";
    case ScalarKind::kInt: {
      const auto value = parse_int(text);
      return value ? std::to_string(*value) : without_underscores(text);
    }
    case ScalarKind::kFloat:
      return format_float(*parse_float(text), true);
    case ScalarKind::kString:
      break;
  }
  return text;
}

std::string python_str(const YAML::Node& node) {
  if (!node || node.IsNull()) return "None";
  if (node.IsMap()) {
    std::string out = "{";
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (out.size() > 1) out += ", ";
      out += python_repr(string_node(it->first.Scalar())) + ": " + python_repr(it->second);
    }
    return out + "}";
  }
  if (node.IsSequence()) {
    std::string out = "[";
    for (const auto& item : node) {
      if (out.size() > 1) out += ", ";
      out += python_repr(item);
    }
    return out + "]";
  }
  switch (scalar_kind(node)) {
    case ScalarKind::kBool:
      return *parse_bool(node.Scalar()) ? "True" : "False";
    case ScalarKind::kFloat:
      return format_float(*parse_float(node.Scalar()), false);
    default:
      return scalar_text(node);
  }
}

const char* python_type(const YAML::Node& node) {
  if (node.IsMap()) return "dict";
  if (node.IsSequence()) return "list";
  switch (scalar_kind(node)) {
    case ScalarKind::kNull:
      return "NoneType";
    case ScalarKind::kBool:
      return "bool";
    case ScalarKind::kInt:
      return "int";
    case ScalarKind::kFloat:
      return "float";
    case ScalarKind::kString:
      break;
  }
  return "str";
}

bool values_equal(const YAML::Node& a, const YAML::Node& b) {
  if (a.IsMap() || b.IsMap()) {
    if (!a.IsMap() || !b.IsMap() || a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      const YAML::Node other = find_child(b, it->first.Scalar());
      if (!other || !values_equal(it->second, other)) return false;
    }
    return true;
  }
  if (a.IsSequence() || b.IsSequence()) {
    if (!a.IsSequence() || !b.IsSequence() || a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!values_equal(a[i], b[i])) return false;
    }
    return true;
  }
  const ScalarKind ka = scalar_kind(a);
  const ScalarKind kb = scalar_kind(b);
  if (ka == ScalarKind::kNull || kb == ScalarKind::kNull) return ka == kb;
  if (ka == ScalarKind::kString || kb == ScalarKind::kString) return ka == kb && a.Scalar() == b.Scalar();
  // bool, int and float compare as numbers in Python (True == 1 == 1.0).
  const auto number = [](const YAML::Node& n, ScalarKind kind) {
    if (kind == ScalarKind::kBool) return *parse_bool(n.Scalar()) ? 1.0 : 0.0;
    return parse_float(n.Scalar()).value_or(NAN);  // NaN (unequal) for ints beyond 64 bits
  };
  return number(a, ka) == number(b, kb);
}

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> segments;
  std::string current;
  for (char c : key) {
    if (c == '.' || c == '[' || c == ']') {
      if (!current.empty()) segments.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) segments.push_back(current);
  return segments;
}

std::string join_key(const std::vector<std::string>& segments) {
  std::string key;
  for (const auto& segment : segments) key += (key.empty() ? "" : ".") + segment;
  return key;
}

YAML::Node find_child(const YAML::Node& node, const std::string& segment) {
  if (node.IsMap()) {
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar() && it->first.Scalar() == segment) return it->second;
    }
  } else if (node.IsSequence()) {
    const auto index = parse_digits(segment, 10);
    if (index && *index >= 0 && static_cast<size_t>(*index) < node.size())
      return node[static_cast<size_t>(*index)];
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

void merge_into(YAML::Node& dest, const YAML::Node& src) {
  for (auto it = src.begin(); it != src.end(); ++it) {
    const std::string key = it->first.Scalar();
    YAML::Node existing = find_child(dest, key);
    if (existing && existing.IsMap() && it->second.IsMap()) {
      merge_into(existing, it->second);
    } else if (!existing || !is_missing(it->second)) {
      dest[key] = YAML::Clone(it->second);
    }
  }
}

bool keys_exist(const YAML::Node& dest, const YAML::Node& src) {
  for (auto it = src.begin(); it != src.end(); ++it) {
    const YAML::Node existing = find_child(dest, it->first.Scalar());
    if (!existing) return false;
    if (existing.IsMap() && it->second.IsMap() && !keys_exist(existing, it->second)) return false;
  }
  return true;
}

std::vector<std::string> all_keys(const YAML::Node& root) {
  std::vector<std::string> keys;
  if (root.IsMap()) collect_keys(root, "", keys);
  return keys;
}

std::string nearest_key(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = 0;
  for (const auto& candidate : candidates) {
    const size_t distance = edit_distance(key, candidate);
    if (best.empty() || distance < best_distance) {
      best = candidate;
      best_distance = distance;
    }
  }
  return best;
}

std::string emit_yaml(const YAML::Node& root) {
  std::string out;
  if (is_block(root) && root.IsMap()) {
    emit_map(root, 0, false, out);
  } else if (is_block(root)) {
    emit_sequence(root, 0, false, out);
  } else {
    out = (!root || root.IsNull() ? "{}" : flow_scalar(root)) + "\n";
  }
  return out;
}

}  // namespace saccade::config_detail
