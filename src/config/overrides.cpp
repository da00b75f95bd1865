// Hydra 1.3 override grammar: a recursive-descent parser over the override text.
#include "config/overrides.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <optional>
#include <regex>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "base/text.h"
#include "config/config.h"
#include "config/interpolation.h"
#include "config/yaml_tree.h"

namespace saccade::config_detail {
namespace {

const char kWhitespace[] = " \t";
// Characters a backslash escapes in unquoted values.
const std::string kEscapable = "\\()[]{}:=, \t";
// More range values than this is certainly a typo (and would exhaust memory).
const long long kMaxRangeValues = 1000000;

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
  const auto lead = static_cast<unsigned char>(text[at]);
  const size_t length = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
  return text.substr(at, length);
}

// Typed primitives of the grammar (INT, FLOAT, BOOL, NULL tokens); anything else is a string.
YAML::Node typed_primitive(const std::string& text) {
  static const std::string kInt = "(0|[1-9](_?[0-9])*)";
  static const std::string kPoint = "(" + kInt + "\\.|" + kInt + "?\\.[0-9](_?[0-9])*)";
  static const std::regex null_re("null", std::regex::icase);
  static const std::regex true_re("true", std::regex::icase);
  static const std::regex false_re("false", std::regex::icase);
  static const std::regex int_re("[+-]?" + kInt);
  static const std::regex float_re(
      "[+-]?(" + kPoint + "|(" + kInt + "|" + kPoint +
      ")[eE][+-]?[0-9](_?[0-9])*|[Ii][Nn][Ff]|[Nn][Aa][Nn])");
  if (std::regex_match(text, null_re)) return YAML::Node(YAML::NodeType::Null);
  if (std::regex_match(text, true_re)) return YAML::Node("true");
  if (std::regex_match(text, false_re)) return YAML::Node("false");
  if (std::regex_match(text, int_re)) return YAML::Node(scalar_text(YAML::Node(text)));
  if (std::regex_match(text, float_re)) return YAML::Node(format_float(*parse_float(text), true));
  return YAML::Node(YAML::NodeType::Undefined);
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

// Python's ordering of two sort() values: numbers (bools among them) by value, strings by code
// point; nullopt where Python's sorted() raises (a number against a string, null, containers).
std::optional<bool> python_less(const YAML::Node& a, const YAML::Node& b) {
  const auto kind_of = [](const YAML::Node& node) {
    return node.IsScalar() ? scalar_kind(node) : ScalarKind::kNull;
  };
  const ScalarKind kind_a = kind_of(a), kind_b = kind_of(b);
  const auto numeric = [](ScalarKind kind) {
    return kind == ScalarKind::kInt || kind == ScalarKind::kFloat || kind == ScalarKind::kBool;
  };
  if (numeric(kind_a) && numeric(kind_b)) {
    const auto value = [](const YAML::Node& node, ScalarKind kind) -> long double {
      if (kind == ScalarKind::kBool) return *parse_bool(node.Scalar()) ? 1 : 0;
      if (kind == ScalarKind::kInt) return static_cast<long double>(*parse_int(node.Scalar()));
      return *parse_float(node.Scalar());
    };
    return value(a, kind_a) < value(b, kind_b);
  }
  if (kind_a == ScalarKind::kString && kind_b == ScalarKind::kString) return a.Scalar() < b.Scalar();
  return std::nullopt;
}

// `text` as one override value that parses back to the string itself: as it is where it would,
// else single-quoted, with the backslashes before a quote doubled as unquote() halves them.
std::string quoted_if_needed(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_of("\\()[]{}:=,'\" \t") == std::string::npos &&
                     text.find("${") == std::string::npos && !typed_primitive(text).IsDefined();
  if (plain) return text;
  std::string out = "'";
  size_t backslashes = 0;
  for (const char c : text) {
    if (c == '\\') {
      ++backslashes;
      continue;
    }
    out.append(c == '\'' ? 2 * backslashes + 1 : backslashes, '\\');
    backslashes = 0;
    out += c;
  }
  return out.append(2 * backslashes, '\\') + "'";
}

// A value as override text that parses back to it ("1", "2.5", "'007'", "[1,'a b']").
std::string override_text(const YAML::Node& node) {
  if (!node || node.IsNull()) return "null";
  if (node.IsSequence()) {
    std::vector<std::string> items;
    for (const auto& item : node) items.push_back(override_text(item));
    return "[" + join(items, ",") + "]";
  }
  if (node.IsMap()) {
    std::vector<std::string> items;
    for (auto it = node.begin(); it != node.end(); ++it)
      items.push_back(quoted_if_needed(it->first.Scalar()) + ":" + override_text(it->second));
    return "{" + join(items, ",") + "}";
  }
  switch (scalar_kind(node)) {
    case ScalarKind::kString:
      return quoted_if_needed(node.Scalar());
    case ScalarKind::kFloat:
      return format_float(*parse_float(node.Scalar()), false);
    default:
      return scalar_text(node);
  }
}

// The casts int(), float(), str() and bool() of one value, as Python converts (Hydra's
// grammar_functions): lists and dicts item by item. Throws std::invalid_argument with the reason.
enum class Cast { kInt, kFloat, kStr, kBool };

YAML::Node cast_value(const YAML::Node& node, Cast cast) {
  const char* const kNames[] = {"int", "float", "str", "bool"};
  const std::string name = kNames[static_cast<int>(cast)];
  if (node.IsSequence()) {
    YAML::Node list(YAML::NodeType::Sequence);
    for (const auto& item : node) list.push_back(cast_value(item, cast));
    return list;
  }
  if (node.IsMap()) {
    YAML::Node dict(YAML::NodeType::Map);
    for (auto it = node.begin(); it != node.end(); ++it)
      dict[it->first.Scalar()] = cast_value(it->second, cast);
    return dict;
  }
  const ScalarKind kind = node.IsScalar() ? scalar_kind(node) : ScalarKind::kNull;
  if (kind == ScalarKind::kNull) throw std::invalid_argument(name + "() cannot convert null");
  const std::string& text = node.Scalar();
  const auto cannot = [&]() {
    const std::string shown = kind == ScalarKind::kString ? "'" + text + "'" : override_text(node);
    return std::invalid_argument(name + "() cannot convert " + shown);
  };
  const auto number = [&]() -> double {
    if (kind == ScalarKind::kBool) return *parse_bool(text) ? 1 : 0;
    if (kind != ScalarKind::kString) return *parse_float(text);
    const auto value = python_float(text);
    if (!value) throw cannot();
    return *value;
  };
  switch (cast) {
    case Cast::kInt: {
      if (kind == ScalarKind::kInt) return node;
      if (kind == ScalarKind::kString) {
        const auto value = python_int(text);
        if (!value) throw cannot();
        return YAML::Node(std::to_string(*value));
      }
      const double value = std::trunc(number());
      if (!(std::fabs(value) < 9.2e18)) throw cannot();
      return YAML::Node(std::to_string(static_cast<long long>(value)));
    }
    case Cast::kFloat:
      return YAML::Node(format_float(number(), true));
    case Cast::kStr:
      return string_node(kind == ScalarKind::kFloat ? format_float(number(), false) : scalar_text(node));
    case Cast::kBool: {
      if (kind != ScalarKind::kString) return YAML::Node(number() != 0 ? "true" : "false");
      std::string lower = text;
      std::transform(
          lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
      if (lower != "true" && lower != "false") throw cannot();
      return YAML::Node(lower);
    }
  }
  return node;
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
    Element first = parse_element(Context::kTop);
    skip_ws();
    if (!at_end() && peek() == ',') {
      out.sweep = SweepKind::kSimple;
      out.sweep_values.push_back(slice(first));
      while (!at_end() && peek() == ',') {
        ++pos_;
        skip_ws();
        Element next = parse_element(Context::kTop);
        if (first.sweep != SweepKind::kNone || next.sweep != SweepKind::kNone)
          fail("sweeps cannot be nested");
        out.sweep_values.push_back(slice(next));
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
    Element element = parse_element(Context::kTop);
    if (element.sweep != SweepKind::kNone) fail("sweeps are not allowed here");
    skip_ws();
    expect_end();
    return element.node;
  }

 private:
  struct SweepItem {
    YAML::Node value;
    std::string text;  // the value as override text, as a job gets it
  };
  struct RangeArgs {
    YAML::Node start, stop, step;
  };
  struct Element {
    YAML::Node node;
    SweepKind sweep = SweepKind::kNone;
    std::vector<SweepItem> items;    // a sweep's values, in order
    std::optional<RangeArgs> range;  // a range sweep's arguments, which int() and float() convert
    GlobPatterns glob;               // a glob sweep's patterns
    size_t begin = 0;
    size_t end = 0;
  };
  using Args = std::vector<std::pair<std::string, Element>>;  // (argument name or "", value)

  [[noreturn]] void fail(const std::string& reason) const {
    throw ConfigError("Error parsing override '" + input_ + "': " + reason);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return text_[pos_]; }
  void skip_ws() {
    while (!at_end() && (peek() == ' ' || peek() == '\t')) ++pos_;
  }
  void expect_end() const {
    if (!at_end()) fail(std::string("unexpected '") + peek() + "'");
  }
  std::string slice(const Element& element) const {
    return text_.substr(element.begin, element.end - element.begin);
  }

  Element parse_element(Context context) {
    // Lists, dicts and function calls nest by recursion: as deep as a YAML file may nest, no deeper.
    if (++depth_ > kMaxYamlDepth)
      fail("the value nests deeper than " + std::to_string(kMaxYamlDepth) + " levels");
    Element element;
    element.begin = pos_;
    static const std::regex function_start("([A-Za-z_][A-Za-z0-9_-]*)[ \\t]*\\(");
    std::smatch match;
    if (at_end()) {
      fail("missing value");
    } else if (peek() == '[') {
      element.node = parse_list();
    } else if (peek() == '{') {
      element.node = parse_dict();
    } else if (peek() == '\'' || peek() == '"') {
      element.node = parse_quoted();
    } else if (std::regex_search(
                   text_.cbegin() + static_cast<std::ptrdiff_t>(pos_), text_.cend(), match, function_start,
                   std::regex_constants::match_continuous)) {
      pos_ += match.length(0);
      parse_function(match[1].str(), element);
    } else {
      element.node = parse_primitive(context);
    }
    element.end = pos_;
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

  YAML::Node nested(const Element& element) const {
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
    // Trim unescaped blanks at both ends: a blank is escaped by an odd run of backslashes before
    // it, so one after an escaped backslash is trimmed.
    size_t first = text_.find_first_not_of(kWhitespace, begin);
    size_t last = pos_;
    const auto escaped = [&](size_t at) {
      size_t run = 0;
      while (at > first + run && text_[at - 1 - run] == '\\') ++run;
      return run % 2 == 1;
    };
    while (last > first && (text_[last - 1] == ' ' || text_[last - 1] == '\t') && !escaped(last - 1)) --last;
    if (first == std::string::npos || first >= last) fail("missing value");
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

  void parse_function(const std::string& name, Element& element) {
    Args args;
    skip_ws();
    while (!at_end() && peek() != ')') {
      static const std::regex named_arg("([A-Za-z_][A-Za-z0-9_]*)[ \\t]*=[ \\t]*");
      std::smatch match;
      std::string arg_name;
      if (std::regex_search(
              text_.cbegin() + static_cast<std::ptrdiff_t>(pos_), text_.cend(), match, named_arg,
              std::regex_constants::match_continuous)) {
        arg_name = match[1].str();
        pos_ += match.length(0);
      }
      args.emplace_back(arg_name, parse_element(Context::kFunctionArg));
      skip_ws();
      if (!at_end() && peek() == ',') {
        ++pos_;
        skip_ws();
      }
    }
    if (at_end()) fail("missing ')'");
    ++pos_;
    const size_t begin = element.begin;
    if (name == "choice") {
      choice(args, element);
    } else if (name == "range") {
      range(args, element);
    } else if (name == "glob") {
      glob(args, element);
    } else if (name == "sort") {
      sort(args, element);
    } else if (name == "tag") {
      tag(args, element);
    } else if (name == "int" || name == "float" || name == "str" || name == "bool") {
      const Cast cast = name == "int"     ? Cast::kInt
                        : name == "float" ? Cast::kFloat
                        : name == "str"   ? Cast::kStr
                                          : Cast::kBool;
      cast_function(name, cast, args, element);
    } else if (name == "shuffle") {
      fail(
          "shuffle() is not supported: a sweep in random order could not be repeated; list the values in the "
          "order wanted");
    } else if (name == "interval") {
      fail("interval() is a continuous sweep, which only sampling sweepers run; use choice() or range()");
    } else {
      fail(
          "unsupported function '" + name +
          "' (supported: choice, range, glob, sort, tag, int, float, str, bool)");
    }
    element.begin = begin;
  }

  // The unnamed arguments of a function taking any number of them, and its named ones.
  std::vector<const Element*> positional(
      const std::string& function,
      const Args& args,
      const std::vector<std::string>& names,
      std::vector<const Element*>& named) const {
    std::vector<const Element*> values;
    named.assign(names.size(), nullptr);
    for (const auto& [arg_name, value] : args) {
      if (arg_name.empty()) {
        values.push_back(&value);
        continue;
      }
      const auto slot = static_cast<size_t>(std::find(names.begin(), names.end(), arg_name) - names.begin());
      if (slot == names.size()) fail(function + "() has no argument '" + arg_name + "'");
      if (named[slot] != nullptr) fail(function + "() got two values for '" + arg_name + "'");
      named[slot] = &value;
    }
    return values;
  }

  // Python's binding of a call's arguments to `names`: positional ones in order, named ones by name.
  std::vector<const Element*> bind(
      const std::string& function, const Args& args, const std::vector<std::string>& names) const {
    std::vector<const Element*> bound;
    const std::vector<const Element*> values = positional(function, args, names, bound);
    if (values.size() > names.size())
      fail(function + "() takes at most " + std::to_string(names.size()) + " arguments");
    for (size_t i = 0; i < values.size(); ++i) {
      if (bound[i] != nullptr) fail(function + "() got two values for '" + names[i] + "'");
      bound[i] = values[i];
    }
    return bound;
  }

  static bool is_sweep(const Element* element) {
    return element != nullptr && element->sweep != SweepKind::kNone;
  }

  void choice(const Args& args, Element& element) const {
    if (args.empty()) fail("choice() needs at least one value");
    element.sweep = SweepKind::kChoice;
    for (const auto& [arg_name, arg] : args) {
      if (!arg_name.empty()) fail("choice() takes values only, not '" + arg_name + "='");
      if (arg.sweep != SweepKind::kNone) fail("sweeps cannot be nested");
      element.items.push_back({arg.node, slice(arg)});
    }
  }

  // range(stop), range(start, stop) or range(start, stop, step), by position or by name.
  void range(const Args& args, Element& element) const {
    const auto bound = bind("range", args, {"start", "stop", "step"});
    if (bound[0] == nullptr) fail("range() needs start");
    for (const Element* arg : bound) {
      const ScalarKind kind =
          arg == nullptr || !arg->node.IsScalar() ? ScalarKind::kNull : scalar_kind(arg->node);
      if (arg != nullptr && (is_sweep(arg) || (kind != ScalarKind::kInt && kind != ScalarKind::kFloat)))
        fail("range() arguments must be numbers");
    }
    RangeArgs range{
        bound[0]->node, bound[1] ? bound[1]->node : YAML::Node(),
        bound[2] ? bound[2]->node : YAML::Node("1")};
    if (bound[1] == nullptr) {
      range.stop.reset(range.start);
      range.start.reset(YAML::Node("0"));
    }
    set_range(range, element);
  }

  void set_range(const RangeArgs& range, Element& element) const {
    element.sweep = SweepKind::kRange;
    element.range = range;
    element.items.clear();
    const auto add = [&](const YAML::Node& value) {
      if (static_cast<long long>(element.items.size()) >= kMaxRangeValues)
        fail("range() gives too many values");
      element.items.push_back({value, override_text(value)});
    };
    const bool all_ints = scalar_kind(range.start) == ScalarKind::kInt &&
                          scalar_kind(range.stop) == ScalarKind::kInt &&
                          scalar_kind(range.step) == ScalarKind::kInt;
    if (all_ints) {
      // Python's range(), exactly.
      const auto start = parse_int(range.start.Scalar()), stop = parse_int(range.stop.Scalar()),
                 step = parse_int(range.step.Scalar());
      if (!start || !stop || !step) fail("range() bounds must be 64-bit integers");
      if (*step == 0) fail("range() step must not be zero");
      // A step past the 64-bit integers ends the range as surely as one past stop.
      long long value = *start;
      while (*step > 0 ? value < *stop : value > *stop) {
        add(YAML::Node(std::to_string(value)));
        if (__builtin_add_overflow(value, *step, &value)) break;
      }
      return;
    }
    // Hydra's FloatRange (exact decimal steps), which long double arithmetic reproduces for the
    // usual step sizes.
    const long double start = *parse_float(range.start.Scalar());
    const long double stop = *parse_float(range.stop.Scalar());
    const long double step = *parse_float(range.step.Scalar());
    if (step == 0) fail("range() step must not be zero");
    for (long long i = 0;; ++i) {
      const long double value = start + static_cast<long double>(i) * step;
      if (step > 0 ? value >= stop : value <= stop) break;
      add(YAML::Node(format_float(static_cast<double>(value), true)));
    }
  }

  // glob(include, exclude=None): the options of the key's config group that match an include
  // pattern and no exclude pattern (each a pattern or a list of them), chosen when sweeping.
  void glob(const Args& args, Element& element) const {
    const auto bound = bind("glob", args, {"include", "exclude"});
    if (bound[0] == nullptr) fail("glob() needs include");
    const auto patterns = [&](const Element* arg) {
      std::vector<std::string> out;
      if (arg == nullptr) return out;
      if (is_sweep(arg) || arg->node.IsMap()) fail("glob() takes a pattern or a list of patterns");
      if (arg->node.IsScalar()) out.push_back(arg->node.Scalar());
      for (const auto& item : arg->node.IsSequence() ? arg->node : YAML::Node()) {
        if (!item.IsScalar()) fail("glob() takes a pattern or a list of patterns");
        out.push_back(item.Scalar());
      }
      return out;
    };
    element.sweep = SweepKind::kGlob;
    element.glob = {patterns(bound[0]), patterns(bound[1])};
  }

  // tag(tag..., sweep): the sweep itself; the basic sweeper has no use for tags.
  void tag(const Args& args, Element& element) const {
    std::vector<const Element*> named;
    std::vector<const Element*> values = positional("tag", args, {"sweep"}, named);
    if (named[0] != nullptr) values.push_back(named[0]);
    if (values.empty() || !is_sweep(values.back())) fail("tag() needs a sweep as its last argument");
    for (size_t i = 0; i + 1 < values.size(); ++i) {
      if (is_sweep(values[i]) || !values[i]->node.IsScalar() ||
          scalar_kind(values[i]->node) != ScalarKind::kString)
        fail("tag() tags must be strings");
    }
    element = *values.back();
  }

  // sort(value..., sweep=None, list=None, reverse=false): a sweep's values or a list in Python's
  // order (numbers by value, strings by code point), stable; several values are a sorted sweep.
  void sort(const Args& args, Element& element) const {
    std::vector<const Element*> named;
    const std::vector<const Element*> values = positional("sort", args, {"sweep", "list", "reverse"}, named);
    bool reverse = false;
    if (named[2] != nullptr) {
      if (is_sweep(named[2]) || !named[2]->node.IsScalar() ||
          scalar_kind(named[2]->node) != ScalarKind::kBool)
        fail("sort() reverse must be true or false");
      reverse = *parse_bool(named[2]->node.Scalar());
    }
    const auto order = [&](std::vector<YAML::Node> nodes) {
      std::vector<size_t> places(nodes.size());
      std::iota(places.begin(), places.end(), 0);
      std::stable_sort(places.begin(), places.end(), [&](size_t a, size_t b) {
        const auto less = reverse ? python_less(nodes[b], nodes[a]) : python_less(nodes[a], nodes[b]);
        if (!less) fail("sort() cannot order " + override_text(nodes[a]) + " and " + override_text(nodes[b]));
        return *less;
      });
      return places;
    };
    const auto sort_sweep = [&](const Element& sweep) {
      if (sweep.sweep == SweepKind::kGlob) fail("sort() cannot sort a glob()");
      std::vector<YAML::Node> nodes;
      for (const SweepItem& item : sweep.items) nodes.push_back(item.value);
      element = sweep;
      element.range.reset();
      element.items.clear();
      for (const size_t place : order(nodes)) element.items.push_back(sweep.items[place]);
    };
    const auto sort_list = [&](const YAML::Node& list) {
      std::vector<YAML::Node> nodes(list.begin(), list.end());
      element.node.reset(YAML::Node(YAML::NodeType::Sequence));
      for (const size_t place : order(nodes)) element.node.push_back(nodes[place]);
    };
    if (named[1] != nullptr) {
      if (is_sweep(named[1]) || !named[1]->node.IsSequence()) fail("sort() list must be a list");
      return sort_list(named[1]->node);
    }
    if (named[0] != nullptr) {
      if (!is_sweep(named[0])) fail("sort() sweep must be a sweep");
      return sort_sweep(*named[0]);
    }
    if (values.empty()) fail("sort() needs a value");
    if (values.size() == 1) {
      if (is_sweep(values[0])) return sort_sweep(*values[0]);
      if (values[0]->node.IsSequence()) return sort_list(values[0]->node);
      element.node.reset(values[0]->node);
      return;
    }
    Element simple;
    simple.sweep = SweepKind::kSimple;
    for (const Element* value : values) {
      if (is_sweep(value) || !value->node.IsScalar())
        fail("sort() of several values takes numbers and strings");
      simple.items.push_back({value->node, slice(*value)});
    }
    sort_sweep(simple);
  }

  // int(), float(), str() and bool() of a value, of each value of a sweep (several values are a
  // sweep), or of a range's bounds (int and float only).
  void cast_function(const std::string& name, Cast cast, const Args& args, Element& element) const {
    std::vector<const Element*> named;
    const std::vector<const Element*> values = positional(name, args, {"value"}, named);
    if (named[0] != nullptr && !values.empty())
      fail(name + "() takes its value by position or by name, not both");
    if (named[0] == nullptr && values.empty()) fail(name + "() needs a value");
    Element source;
    if (named[0] != nullptr || values.size() == 1) {
      source = named[0] != nullptr ? *named[0] : *values[0];
    } else {
      source.sweep = SweepKind::kSimple;
      for (const Element* value : values) {
        if (is_sweep(value)) fail("sweeps cannot be nested");
        source.items.push_back({value->node, slice(*value)});
      }
    }
    if (source.sweep == SweepKind::kGlob) fail(name + "() cannot convert a glob()");
    if (source.range) {
      if (cast != Cast::kInt && cast != Cast::kFloat) fail("a range() can only be cast to int or float");
      return set_range(
          {cast_or_fail(source.range->start, cast), cast_or_fail(source.range->stop, cast),
           cast_or_fail(source.range->step, cast)},
          element);
    }
    element = source;
    if (source.sweep == SweepKind::kNone) {
      element.node.reset(cast_or_fail(source.node, cast));
      return;
    }
    for (SweepItem& item : element.items) {
      item.value.reset(cast_or_fail(item.value, cast));
      item.text = override_text(item.value);
    }
  }

  YAML::Node cast_or_fail(const YAML::Node& node, Cast cast) const {
    try {
      return cast_value(node, cast);
    } catch (const std::invalid_argument& error) {
      fail(error.what());
    }
  }

  const std::string& text_;
  size_t pos_;
  int depth_ = 0;  // of the element being parsed
  const std::string& input_;
};

}  // namespace

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
  static const std::string kSegment = "([A-Za-z_$][A-Za-z0-9_$-]*|[0-9]+)";
  static const std::regex key_re(kSegment + "(\\." + kSegment + ")*|" + kSegment + "(/" + kSegment + ")+");
  static const std::regex package_re("(" + kSegment + "(\\." + kSegment + ")*)?");
  if (!std::regex_match(key, key_re)) fail("invalid key '" + key + "'");
  if (out.package && !std::regex_match(*out.package, package_re))
    fail("invalid package '" + *out.package + "'");
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

YAML::Node parse_value_element(const std::string& text) {
  return ValueParser(text, 0, text).parse_single_element();
}

}  // namespace saccade::config_detail
