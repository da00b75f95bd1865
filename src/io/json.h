// JSON: a small strict reader/writer for the files saccade reads and writes (dataset splits,
// vocabularies, results, metrics, safetensors headers).
//
//   Json doc = read_json_file("dataset_coco.json");       // throws naming file:line:column
//   for (const Json& image : doc.at("images").as_array()) { ... image.at("filename").as_string() ... }
//   Json out = Json::object({{"image_id", 42}, {"caption", "a red circle"}});
//   write_json_file("results/val.json", out, 2);           // atomic; keys in insertion order
//
// Parsing follows RFC 8259 strictly: no comments, no trailing commas, no NaN/Infinity, no
// duplicate keys, no control characters inside strings, at most 512 levels of nesting; every
// string must be valid UTF-8 (\u escapes, surrogate pairs included, are decoded to UTF-8). A
// leading UTF-8 byte-order mark is skipped. Errors are std::invalid_argument with
// "<name>:<line>:<column>: <what was expected>" (line and column 1-based, column in bytes).
//
// Numbers keep their kind: a literal without fraction or exponent that fits int64 is an integer
// (written back exactly); anything else is a double (written in the shortest form that reads
// back to the same value). Objects keep their keys in insertion order, so output is stable.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace saccade {

class Json {
 public:
  enum class Type { null, boolean, integer, real, string, array, object };
  using Array = std::vector<Json>;
  // Members in insertion order; keys are unique (set() replaces, the parser rejects repeats).
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool value) : value_(value) {}
  Json(int value) : value_(static_cast<int64_t>(value)) {}
  Json(int64_t value) : value_(value) {}
  Json(uint64_t value);  // sizes and counts; throws std::invalid_argument above INT64_MAX
  Json(double value) : value_(value) {}
  Json(const char* value) : value_(std::string(value)) {}
  Json(std::string value) : value_(std::move(value)) {}
  Json(Array value) : value_(std::move(value)) {}
  Json(Object value) : value_(std::move(value)) {}

  static Json array(Array items = {}) { return Json(std::move(items)); }
  // The number, or null when there is none.
  static Json number_or_null(const std::optional<double>& value) { return value ? Json(*value) : Json(); }
  static Json object(Object members = {}) { return Json(std::move(members)); }

  Type type() const { return static_cast<Type>(value_.index()); }
  bool is_null() const { return type() == Type::null; }
  bool is_bool() const { return type() == Type::boolean; }
  bool is_integer() const { return type() == Type::integer; }
  bool is_number() const { return type() == Type::integer || type() == Type::real; }
  bool is_string() const { return type() == Type::string; }
  bool is_array() const { return type() == Type::array; }
  bool is_object() const { return type() == Type::object; }

  // Typed reads. Each throws std::invalid_argument ("expected a string, got an array") when the
  // value has another type; as_int64 also accepts a real with an exact integer value.
  bool as_bool() const;
  int64_t as_int64() const;
  double as_double() const;  // integers convert
  const std::string& as_string() const;
  const Array& as_array() const;
  Array& as_array();
  const Object& as_object() const;
  Object& as_object();

  // Object access. find() returns nullptr when the key is absent (or this is not an object);
  // at() throws std::invalid_argument naming the key; set() adds or replaces a member.
  const Json* find(const std::string& key) const;
  const Json& at(const std::string& key) const;
  Json& set(const std::string& key, Json value);

  // Array access: at(i) throws std::invalid_argument when out of range; push_back appends.
  const Json& at(size_t index) const;
  void push_back(Json value);

  // Elements of an array or members of an object; 0 for scalars.
  size_t size() const;

  bool operator==(const Json& other) const { return value_ == other.value_; }
  bool operator!=(const Json& other) const { return !(*this == other); }

 private:
  std::variant<std::nullptr_t, bool, int64_t, double, std::string, Array, Object> value_;
};

// "null", "a boolean", "an integer", "a number", "a string", "an array", "an object".
std::string describe(Json::Type type);

// Parses one JSON document. `name` (a file name) prefixes error positions.
Json parse_json(std::string_view text, const std::string& name = "<json>");

// Reads and parses a file. A missing or unreadable file is a std::runtime_error naming it;
// malformed content a std::invalid_argument "path:line:column: ...".
Json read_json_file(const std::filesystem::path& path);

// Serializes `value`. indent 0 writes one line with no spaces; indent > 0 puts every array
// element and object member on its own line, indented by that many spaces per level (empty
// containers stay "[]" and "{}"). Non-ASCII text is written as UTF-8, control characters and
// '"' '\' escaped. Throws std::invalid_argument for a NaN or infinite number or a string that
// is not valid UTF-8.
std::string dump_json(const Json& value, int indent = 0);

// Writes dump_json(value, indent) plus a final newline through a temporary file and a rename.
void write_json_file(const std::filesystem::path& path, const Json& value, int indent = 0);

}  // namespace saccade
