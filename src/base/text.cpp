// Small text helpers (see text.h).
#include "base/text.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace saccade {

std::string join(const std::vector<std::string>& items, const std::string& separator) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) text += separator;
    text += items[i];
  }
  return text;
}

std::string count_with_examples(const std::vector<std::string>& items) {
  const std::vector<std::string> first(items.begin(), items.begin() + std::min<size_t>(items.size(), 3));
  return std::to_string(items.size()) + " (e.g. " + join(first, ", ") + ")";
}

std::string first_line(const std::string& message) {
  return message.substr(0, message.find('\n'));
}

std::string shape_text(const std::vector<int64_t>& sizes) {
  std::vector<std::string> items;
  for (const int64_t size : sizes) items.push_back(std::to_string(size));
  return "[" + join(items, ", ") + "]";
}

namespace {

// Appends `c` with the control characters (and, when `quotes`, '"' and '\\') backslash-escaped.
void append_escaped(std::string& out, char c, bool quotes) {
  switch (c) {
    case '"':
      out += quotes ? "\\\"" : "\"";
      break;
    case '\\':
      out += quotes ? "\\\\" : "\\";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", static_cast<unsigned char>(c));
        out += escaped;
      } else {
        out += c;
      }
  }
}

}  // namespace

std::string double_quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) append_escaped(out, c, true);
  return out + "\"";
}

std::string escape_control_characters(const std::string& text) {
  std::string out;
  for (const char c : text) append_escaped(out, c, false);
  return out;
}

void append_utf8(std::string& out, uint32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

size_t utf8_sequence_length(const unsigned char* p, size_t remaining) {
  const unsigned char c = p[0];
  if (c < 0x80) return 1;
  size_t length = 0;
  uint32_t code = 0;
  if ((c & 0xE0) == 0xC0) {
    length = 2;
    code = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    length = 3;
    code = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    length = 4;
    code = c & 0x07;
  } else {
    return 0;
  }
  if (remaining < length) return 0;
  for (size_t i = 1; i < length; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    code = (code << 6) | (p[i] & 0x3F);
  }
  static const uint32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kMinimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  return length;
}

uint64_t fnv1a(const void* data, size_t size, uint64_t hash) {
  const auto* bytes = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < size; ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ULL;
  return hash;
}

std::string hex_digest(uint64_t hash) {
  char text[20];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

size_t invalid_utf8_at(const std::string& text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  for (size_t i = 0; i < text.size();) {
    const size_t length = utf8_sequence_length(bytes + i, text.size() - i);
    if (length == 0) return i;
    i += length;
  }
  return std::string::npos;
}

std::string base64_encode(std::string_view bytes) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t count = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;  // the (up to) three bytes, left-aligned in 24 bits
    for (size_t k = 0; k < 3; ++k)
      group = (group << 8) | (k < count ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    for (size_t k = 0; k < 4; ++k) out += k <= count ? kAlphabet[(group >> (18 - 6 * k)) & 63] : '=';
  }
  return out;
}

}  // namespace saccade
