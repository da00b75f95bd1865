// Helpers on yaml-cpp trees shared by the config sources (not part of the public API).
//
// yaml-cpp keeps scalars as untyped text. These helpers give them OmegaConf's types: a plain
// scalar resolves by the YAML 1.1 rules of OmegaConf's loader (null, bool incl. yes/no/on/off,
// int incl. 1_000 and 0x10, float incl. 1e-3 and .inf); a quoted scalar (tag "!") is a string.
// Text produced here follows Python and PyYAML, so printed configs match what Hydra prints.
//
// Every helper that walks a tree takes nodes by const reference and never uses yaml-cpp's
// non-const operator[] for lookups (it inserts keys); rebinding a YAML::Node variable must use
// reset(), because assigning one Node to another overwrites the referenced data.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace saccade::config_detail {

// The type a scalar has for OmegaConf.
enum class ScalarKind { kNull, kBool, kInt, kFloat, kString };

// Null and scalar nodes only; a quoted scalar or one tagged !!str is a string.
ScalarKind scalar_kind(const YAML::Node& node);

// `???`, OmegaConf's mandatory-value marker (quoted or not).
bool is_missing(const YAML::Node& node);

// A string scalar containing "${" (OmegaConf's test for an interpolation).
bool is_interpolation(const YAML::Node& node);

// A string scalar that stays a string whatever its text looks like (tag "!").
YAML::Node string_node(const std::string& text);

// Parsers for scalar text; nullopt if the text is not of that type. parse_bool takes the YAML 1.1
// words in any case, parse_int YAML 1.1 integers (1_000, 0x10, octal 017, 0b101, 1:30), parse_float
// any decimal spelling (YAML's and the override grammar's: .5, 1e-3, -.inf, nan) and integers.
std::optional<bool> parse_bool(const std::string& text);
std::optional<long long> parse_int(const std::string& text);
std::optional<double> parse_float(const std::string& text);
// Python's int() and float() of a string, as OmegaConf's typed nodes convert string values (a
// quoted value, or command-line text the override grammar leaves a string): "010" is 10, not
// YAML's octal 8, and "0x10" and "1:30" are not numbers. Surrounding whitespace and underscores
// between digits are allowed, as Python allows them.
std::optional<long long> python_int(const std::string& text);
std::optional<double> python_float(const std::string& text);

// Python's repr() of a float ("0.001", "1e-05", "inf"); with yaml_style, PyYAML's spelling
// ("1.0e-05", ".inf", ".nan").
std::string format_float(double value, bool yaml_style);

// A non-null scalar as text: numbers and bools in canonical YAML spelling ("1000", "0.001",
// "true"), strings as they are.
std::string scalar_text(const YAML::Node& node);

// Python's str() of a resolved value, as OmegaConf uses it inside string interpolations:
// "True", "None", "1.5", "[1, 'x']", "{'a': 1}".
std::string python_str(const YAML::Node& node);

// Python's type() name of a value as OmegaConf loads it ("dict", "list", "NoneType", "bool", "int",
// "float", "str"), which Hydra's errors name.
const char* python_type(const YAML::Node& node);

// Equality of resolved values as Python compares them (1 == 1.0, 'a' == 'a').
bool values_equal(const YAML::Node& a, const YAML::Node& b);

// "a.b[0].c" -> {"a", "b", "0", "c"}; "" -> {}.
std::vector<std::string> split_key(const std::string& key);
std::string join_key(const std::vector<std::string>& segments);

// The child of a mapping (by key) or sequence (by decimal index); an invalid node (operator!
// is true) when there is none or `node` is not a container.
YAML::Node find_child(const YAML::Node& node, const std::string& segment);

// OmegaConf's merge of `src` into the mapping `dest`: mappings merge recursively, everything
// else is replaced by a deep copy, and a `???` in src keeps the value already in dest.
void merge_into(YAML::Node& dest, const YAML::Node& src);

// Whether every key of the mapping `src` (recursively, where both sides are mappings) already
// exists in `dest`; merging it in struct mode is then legal.
bool keys_exist(const YAML::Node& dest, const YAML::Node& src);

// Every dotted path in the tree (mappings only, interpolations not followed), parents first.
std::vector<std::string> all_keys(const YAML::Node& root);

// The candidate nearest to `key` by edit distance ("" if there are no candidates).
std::string nearest_key(const std::string& key, const std::vector<std::string>& candidates);

// The tree as block YAML, as OmegaConf.to_yaml prints it (PyYAML style: keys in order,
// sequences not indented under their key, strings quoted only where YAML would misread them).
std::string emit_yaml(const YAML::Node& root);

// A config holds a few hundred values a few levels deep: a YAML tree that expands, through
// aliases, to more than kMaxYamlValues or nests deeper than kMaxYamlDepth is refused (ConfigError
// naming `where`) before anything walks it, as an alias bomb would take exponential time and
// memory, and an alias inside its own anchor makes a cycle. An override's key or value nests no
// deeper (overrides.cpp), nor an interpolation; yaml-cpp's parser stops a file at 500 levels.
constexpr int64_t kMaxYamlValues = 100000;
constexpr int kMaxYamlDepth = 512;
void check_expanded_size(const YAML::Node& root, const std::string& where);

// `text` parsed as YAML; malformed YAML, or YAML nested past yaml-cpp's 500 levels (whose own
// message is "bad file"), is a ConfigError naming `where` and the line.
YAML::Node parse_yaml(const std::string& text, const std::string& where);

}  // namespace saccade::config_detail
