// Hydra 1.3's grammar functions (hydra/_internal/grammar/grammar_functions.py) over parsed
// override elements.
#include "config/override_functions.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/text.h"
#include "config/config.h"
#include "config/python_decimal.h"
#include "config/yaml_tree.h"

namespace saccade::config_detail {
namespace {

// More range values than this is certainly a typo (and would exhaust memory).
const long long kMaxRangeValues = 1000000;

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
      items.push_back(escape_special_characters(it->first.Scalar()) + ":" + override_text(it->second));
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

class OverrideFunctions {
 public:
  explicit OverrideFunctions(const std::string& input) : input_(input) {}

  OverrideElement call(const std::string& name, const FunctionArgs& args) const {
    OverrideElement element;
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
    return element;
  }

 private:
  [[noreturn]] void fail(const std::string& reason) const { fail_override(input_, reason); }

  // The unnamed arguments of a function taking any number of them, and its named ones.
  std::vector<const OverrideElement*> positional(
      const std::string& function,
      const FunctionArgs& args,
      const std::vector<std::string>& names,
      std::vector<const OverrideElement*>& named) const {
    std::vector<const OverrideElement*> values;
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
  std::vector<const OverrideElement*> bind(
      const std::string& function, const FunctionArgs& args, const std::vector<std::string>& names) const {
    std::vector<const OverrideElement*> bound;
    const std::vector<const OverrideElement*> values = positional(function, args, names, bound);
    if (values.size() > names.size())
      fail(function + "() takes at most " + std::to_string(names.size()) + " arguments");
    for (size_t i = 0; i < values.size(); ++i) {
      if (bound[i] != nullptr) fail(function + "() got two values for '" + names[i] + "'");
      bound[i] = values[i];
    }
    return bound;
  }

  static bool is_sweep(const OverrideElement* element) {
    return element != nullptr && element->sweep != SweepKind::kNone;
  }

  void choice(const FunctionArgs& args, OverrideElement& element) const {
    if (args.empty()) fail("choice() needs at least one value");
    element.sweep = SweepKind::kChoice;
    for (const auto& [arg_name, arg] : args) {
      if (!arg_name.empty()) fail("choice() takes values only, not '" + arg_name + "='");
      if (arg.sweep != SweepKind::kNone) fail("sweeps cannot be nested");
      element.items.push_back({arg.node, arg.text});
    }
  }

  // range(stop), range(start, stop) or range(start, stop, step), by position or by name.
  void range(const FunctionArgs& args, OverrideElement& element) const {
    const auto bound = bind("range", args, {"start", "stop", "step"});
    if (bound[0] == nullptr) fail("range() needs start");
    for (const OverrideElement* arg : bound) {
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

  void set_range(const RangeArgs& range, OverrideElement& element) const {
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
    // Hydra's FloatRange: Python Decimals made exactly from the floats, the step added again and
    // again with the sum rounded to 28 digits, each value the float nearest the running sum.
    const double start = *parse_float(range.start.Scalar());
    const double stop = *parse_float(range.stop.Scalar());
    const double step = *parse_float(range.step.Scalar());
    if (!std::isfinite(start) || !std::isfinite(stop) || !std::isfinite(step))
      fail("range() bounds must be finite numbers");
    if (step == 0) fail("range() step must not be zero");
    const PythonDecimal end(stop), increment(step);
    const int direction = step > 0 ? 1 : -1;
    for (PythonDecimal value(start); value.compare(end) * direction < 0; value = value + increment)
      add(YAML::Node(format_float(value.to_double(), true)));
  }

  // glob(include, exclude=None): the options of the key's config group that match an include
  // pattern and no exclude pattern (each a pattern or a list of them), chosen when sweeping.
  void glob(const FunctionArgs& args, OverrideElement& element) const {
    const auto bound = bind("glob", args, {"include", "exclude"});
    if (bound[0] == nullptr) fail("glob() needs include");
    const auto patterns = [&](const OverrideElement* arg) {
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
  void tag(const FunctionArgs& args, OverrideElement& element) const {
    std::vector<const OverrideElement*> named;
    std::vector<const OverrideElement*> values = positional("tag", args, {"sweep"}, named);
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
  void sort(const FunctionArgs& args, OverrideElement& element) const {
    std::vector<const OverrideElement*> named;
    const std::vector<const OverrideElement*> values =
        positional("sort", args, {"sweep", "list", "reverse"}, named);
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
    const auto sort_sweep = [&](const OverrideElement& sweep) {
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
    OverrideElement simple;
    simple.sweep = SweepKind::kSimple;
    for (const OverrideElement* value : values) {
      if (is_sweep(value) || !value->node.IsScalar())
        fail("sort() of several values takes numbers and strings");
      simple.items.push_back({value->node, value->text});
    }
    sort_sweep(simple);
  }

  // int(), float(), str() and bool() of a value, of each value of a sweep (several values are a
  // sweep), or of a range's bounds (int and float only).
  void cast_function(
      const std::string& name, Cast cast, const FunctionArgs& args, OverrideElement& element) const {
    std::vector<const OverrideElement*> named;
    const std::vector<const OverrideElement*> values = positional(name, args, {"value"}, named);
    if (named[0] != nullptr && !values.empty())
      fail(name + "() takes its value by position or by name, not both");
    if (named[0] == nullptr && values.empty()) fail(name + "() needs a value");
    OverrideElement source;
    if (named[0] != nullptr || values.size() == 1) {
      source = named[0] != nullptr ? *named[0] : *values[0];
    } else {
      source.sweep = SweepKind::kSimple;
      for (const OverrideElement* value : values) {
        if (is_sweep(value)) fail("sweeps cannot be nested");
        source.items.push_back({value->node, value->text});
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

  const std::string& input_;
};

}  // namespace

void fail_override(const std::string& input, const std::string& reason) {
  throw ConfigError("Error parsing override '" + input + "': " + reason);
}

OverrideElement call_override_function(
    const std::string& name, const FunctionArgs& args, const std::string& input) {
  return OverrideFunctions(input).call(name, args);
}

}  // namespace saccade::config_detail
