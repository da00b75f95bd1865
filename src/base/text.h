// Small text helpers every stage shares.
//
//   join({"a", "b", "c"}, ", ")   // a, b, c
//   count_with_examples(ids)      // 5 (e.g. 7, 9, 12)
//   double_quoted("tab\there")      // "tab\there" with the tab written as backslash-t
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace saccade {

// The items with `separator` between each two.
std::string join(const std::vector<std::string>& items, const std::string& separator);

// How many items, with the first few, as messages name them: "5 (e.g. 7, 9, 12)".
std::string count_with_examples(const std::vector<std::string>& items);

// The first line of a message: c10 errors carry source locations and backtraces after it.
std::string first_line(const std::string& message);

// A tensor shape as messages print it: "[2, 3, 4]".
std::string shape_text(const std::vector<int64_t>& sizes);

// `text` in double quotes with '"', '\' and the control characters backslash-escaped, the way
// both JSON and YAML's double-quoted style read them: \" \\ \b \f \n \r \t, the other bytes
// below 0x20 and 0x7f as \u00xx. Every other byte passes through (UTF-8 stays UTF-8).
std::string double_quoted(const std::string& text);

// `text` with only its control characters escaped as double_quoted() escapes them: a message
// quoting outside bytes stays one line.
std::string escape_control_characters(const std::string& text);

// 64-bit FNV-1a over `size` bytes, continuing from `hash` (the offset basis for a fresh digest).
constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;
uint64_t fnv1a(const void* data, size_t size, uint64_t hash = kFnv1aOffset);
// A digest as 16 lower-case hex digits.
std::string hex_digest(uint64_t hash);

// Appends the UTF-8 encoding of the code point `code` (at most U+10FFFF) to `out`.
void append_utf8(std::string& out, uint32_t code);

// Length of the valid UTF-8 sequence starting at `p` (1..4), or 0 when it is malformed:
// overlong forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF are rejected.
size_t utf8_sequence_length(const unsigned char* p, size_t remaining);

// The position of the first byte of `text` that is not valid UTF-8; std::string::npos if none.
size_t invalid_utf8_at(const std::string& text);

// `bytes` in base64 (RFC 4648, section 4: the standard alphabet, '=' padding), as data: URLs carry
// images.
std::string base64_encode(std::string_view bytes);

}  // namespace saccade
