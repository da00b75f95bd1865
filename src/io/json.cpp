// JSON parsing and serialization (see json.h for the accepted grammar and the error format).
#include "io/json.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "base/text.h"
#include "io/run_folder.h"

namespace saccade {
namespace {

constexpr int kMaxDepth = 512;

class Parser {
 public:
  Parser(std::string_view text, const std::string& name) : text_(text), name_(name) {}

  Json parse_document() {
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_whitespace();
    if (pos_ == text_.size()) fail("expected a JSON value, got the end of the input");
    Json value = parse_value(0);
    skip_whitespace();
    if (pos_ != text_.size()) fail("expected the end of the input after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const { fail_at(pos_, message); }

  [[noreturn]] void fail_at(size_t at, const std::string& message) const {
    size_t line = 1;
    size_t column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw std::invalid_argument(
        name_ + ":" + std::to_string(line) + ":" + std::to_string(column) + ": " + message);
  }

  // What the parser is looking at, for error messages: "'x'" or "the end of the input".
  std::string found() const {
    if (pos_ >= text_.size()) return "the end of the input";
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c < 0x20 || c >= 0x7F) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "0x%02X", c);
      return std::string("byte ") + hex;
    }
    return std::string("'") + text_[pos_] + "'";
  }

  void skip_whitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  Json parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than " + std::to_string(kMaxDepth) + " levels");
    if (pos_ >= text_.size()) fail("expected a JSON value, got the end of the input");
    const char c = text_[pos_];
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (c == '"') return Json(parse_string());
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number();
    if (text_.compare(pos_, 4, "true") == 0) return pos_ += 4, Json(true);
    if (text_.compare(pos_, 5, "false") == 0) return pos_ += 5, Json(false);
    if (text_.compare(pos_, 4, "null") == 0) return pos_ += 4, Json();
    fail("expected a JSON value, got " + found());
  }

  Json parse_object(int depth) {
    ++pos_;  // '{'
    Json::Object members;
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return Json(std::move(members));
    }
    while (true) {
      skip_whitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"') fail("expected a string key, got " + found());
      const size_t key_pos = pos_;
      std::string key = parse_string();
      for (const auto& member : members) {
        if (member.first == key) fail_at(key_pos, "duplicate key \"" + key + "\"");
      }
      skip_whitespace();
      if (pos_ >= text_.size() || text_[pos_] != ':')
        fail("expected ':' after an object key, got " + found());
      ++pos_;
      skip_whitespace();
      Json value = parse_value(depth + 1);
      members.emplace_back(std::move(key), std::move(value));
      skip_whitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return Json(std::move(members));
      }
      fail("expected ',' or '}' after an object member, got " + found());
    }
  }

  Json parse_array(int depth) {
    ++pos_;  // '['
    Json::Array items;
    skip_whitespace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return Json(std::move(items));
    }
    while (true) {
      skip_whitespace();
      items.push_back(parse_value(depth + 1));
      skip_whitespace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return Json(std::move(items));
      }
      fail("expected ',' or ']' after an array element, got " + found());
    }
  }

  uint32_t parse_hex4() {
    if (pos_ + 4 > text_.size()) fail("expected 4 hex digits after \\u");
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= c - '0';
      } else if (c >= 'a' && c <= 'f') {
        code |= c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        code |= c - 'A' + 10;
      } else {
        fail("expected 4 hex digits after \\u, got " + found());
      }
      ++pos_;
    }
    return code;
  }

  std::string parse_string() {
    const size_t start = pos_;
    ++pos_;  // '"'
    std::string out;
    while (true) {
      const size_t run = pos_;
      while (pos_ < text_.size()) {
        const unsigned char c = static_cast<unsigned char>(text_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++pos_;
      }
      out.append(text_, run, pos_ - run);
      if (pos_ >= text_.size()) fail_at(start, "unterminated string");
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) fail("control character " + found() + " inside a string (escape it)");
      if (c >= 0x80) {
        const size_t length = utf8_sequence_length(
            reinterpret_cast<const unsigned char*>(text_.data() + pos_), text_.size() - pos_);
        if (length == 0) fail("invalid UTF-8 in a string");
        out.append(text_, pos_, length);
        pos_ += length;
        continue;
      }
      ++pos_;  // '\\'
      if (pos_ >= text_.size()) fail_at(start, "unterminated string");
      const char escape = text_[pos_++];
      switch (escape) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          uint32_t code = parse_hex4();
          if (code >= 0xDC00 && code <= 0xDFFF) fail("lone low surrogate in a \\u escape");
          if (code >= 0xD800 && code <= 0xDBFF) {
            if (text_.compare(pos_, 2, "\\u") != 0)
              fail("high surrogate not followed by a \\u low surrogate");
            pos_ += 2;
            const uint32_t low = parse_hex4();
            if (low < 0xDC00 || low > 0xDFFF) fail("high surrogate not followed by a low surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          }
          append_utf8(out, code);
          break;
        }
        default:
          --pos_;
          fail("invalid escape in a string: a backslash before " + found());
      }
    }
  }

  Json parse_number() {
    const size_t start = pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      return pos_ - from;
    };
    if (text_[pos_] == '-') ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '0') {
      ++pos_;
      if (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') fail("leading zeros in a number");
    } else if (digits() == 0) {
      fail("expected a digit, got " + found());
    }
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      ++pos_;
      integral = false;
      if (digits() == 0) fail("expected a digit after the decimal point, got " + found());
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      integral = false;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (digits() == 0) fail("expected a digit in the exponent, got " + found());
    }
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    if (integral) {
      int64_t value = 0;
      const auto result = std::from_chars(first, last, value);
      if (result.ec == std::errc() && result.ptr == last) return Json(value);
    }
    double value = 0;
    const auto result = std::from_chars(first, last, value);
    if (result.ec == std::errc::result_out_of_range) fail_at(start, "number out of the range of a double");
    return Json(value);
  }

  std::string_view text_;
  const std::string& name_;
  size_t pos_ = 0;
};

void write_string(std::string& out, const std::string& text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const size_t length = bytes[i] < 0x80 ? 1 : utf8_sequence_length(bytes + i, text.size() - i);
    if (length == 0) throw std::invalid_argument("Cannot write JSON: a string is not valid UTF-8");
    i += length;
  }
  out += double_quoted(text);
}

void write_value(std::string& out, const Json& value, int indent, int level) {
  auto newline = [&](int at_level) {
    if (indent > 0) {
      out += '\n';
      out.append(static_cast<size_t>(indent) * at_level, ' ');
    }
  };
  switch (value.type()) {
    case Json::Type::null:
      out += "null";
      break;
    case Json::Type::boolean:
      out += value.as_bool() ? "true" : "false";
      break;
    case Json::Type::integer:
      out += std::to_string(value.as_int64());
      break;
    case Json::Type::real: {
      const double number = value.as_double();
      if (!std::isfinite(number))
        throw std::invalid_argument("Cannot write JSON: the number is NaN or infinite");
      char buffer[32];
      const auto result = std::to_chars(buffer, buffer + sizeof(buffer), number);
      std::string text(buffer, result.ptr);
      // Keep a real a real when read back: "2" would parse as an integer.
      if (text.find_first_of(".e") == std::string::npos) text += ".0";
      out += text;
      break;
    }
    case Json::Type::string:
      write_string(out, value.as_string());
      break;
    case Json::Type::array: {
      const auto& items = value.as_array();
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += ',';
        newline(level + 1);
        write_value(out, items[i], indent, level + 1);
      }
      if (!items.empty()) newline(level);
      out += ']';
      break;
    }
    case Json::Type::object: {
      const auto& members = value.as_object();
      out += '{';
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out += ',';
        newline(level + 1);
        write_string(out, members[i].first);
        out += indent > 0 ? ": " : ":";
        write_value(out, members[i].second, indent, level + 1);
      }
      if (!members.empty()) newline(level);
      out += '}';
      break;
    }
  }
}

}  // namespace

std::string describe(Json::Type type) {
  switch (type) {
    case Json::Type::null:
      return "null";
    case Json::Type::boolean:
      return "a boolean";
    case Json::Type::integer:
      return "an integer";
    case Json::Type::real:
      return "a number";
    case Json::Type::string:
      return "a string";
    case Json::Type::array:
      return "an array";
    case Json::Type::object:
      return "an object";
  }
  return "?";
}

namespace {

[[noreturn]] void type_error(const std::string& expected, Json::Type got) {
  throw std::invalid_argument("expected " + expected + ", got " + describe(got));
}

}  // namespace

Json::Json(uint64_t value) {
  if (value > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    throw std::invalid_argument("JSON integer " + std::to_string(value) + " does not fit int64");
  }
  value_ = static_cast<int64_t>(value);
}

bool Json::as_bool() const {
  if (!is_bool()) type_error("a boolean", type());
  return std::get<bool>(value_);
}

int64_t Json::as_int64() const {
  if (is_integer()) return std::get<int64_t>(value_);
  if (type() == Type::real) {
    const double number = std::get<double>(value_);
    // 2^63 is the first double above the int64 range.
    if (number == std::floor(number) && number >= -9223372036854775808.0 && number < 9223372036854775808.0) {
      return static_cast<int64_t>(number);
    }
  }
  type_error("an integer", type());
}

double Json::as_double() const {
  if (is_integer()) return static_cast<double>(std::get<int64_t>(value_));
  if (type() != Type::real) type_error("a number", type());
  return std::get<double>(value_);
}

const std::string& Json::as_string() const {
  if (!is_string()) type_error("a string", type());
  return std::get<std::string>(value_);
}

const Json::Array& Json::as_array() const {
  if (!is_array()) type_error("an array", type());
  return std::get<Array>(value_);
}

Json::Array& Json::as_array() {
  if (!is_array()) type_error("an array", type());
  return std::get<Array>(value_);
}

const Json::Object& Json::as_object() const {
  if (!is_object()) type_error("an object", type());
  return std::get<Object>(value_);
}

Json::Object& Json::as_object() {
  if (!is_object()) type_error("an object", type());
  return std::get<Object>(value_);
}

const Json* Json::find(const std::string& key) const {
  if (!is_object()) return nullptr;
  for (const auto& member : std::get<Object>(value_)) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const Json& Json::at(const std::string& key) const {
  const Json* value = find(key);
  if (value == nullptr) {
    if (!is_object()) type_error("an object", type());
    throw std::invalid_argument("missing key \"" + key + "\"");
  }
  return *value;
}

Json& Json::set(const std::string& key, Json value) {
  Object& members = as_object();
  for (auto& member : members) {
    if (member.first == key) return member.second = std::move(value);
  }
  members.emplace_back(key, std::move(value));
  return members.back().second;
}

const Json& Json::at(size_t index) const {
  const Array& items = as_array();
  if (index >= items.size()) {
    throw std::invalid_argument(
        "index " + std::to_string(index) + " out of range for an array of " + std::to_string(items.size()));
  }
  return items[index];
}

void Json::push_back(Json value) {
  as_array().push_back(std::move(value));
}

size_t Json::size() const {
  if (is_array()) return std::get<Array>(value_).size();
  if (is_object()) return std::get<Object>(value_).size();
  return 0;
}

Json parse_json(std::string_view text, const std::string& name) {
  return Parser(text, name).parse_document();
}

Json read_json_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in || std::filesystem::is_directory(path))
    throw std::runtime_error("Could not open JSON file " + path.string());
  // Read in one piece sized to the file: a stream copy would hold a COCO file (~80 MB) twice.
  std::string text(std::filesystem::file_size(path), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad() || static_cast<size_t>(in.gcount()) != text.size())
    throw std::runtime_error("Could not read JSON file " + path.string());
  return parse_json(text, path.string());
}

std::string dump_json(const Json& value, int indent) {
  std::string out;
  write_value(out, value, indent, 0);
  return out;
}

void write_json_file(const std::filesystem::path& path, const Json& value, int indent) {
  write_file_atomically(path, dump_json(value, indent) + "\n");
}

}  // namespace saccade
