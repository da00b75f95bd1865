// EnumNames: the one table of names of an enum, from which its to_string and parse_* are made.
//
//   enum class Gate { none, scalar, vector };
//   const EnumNames<Gate> kGateNames("gate", {{Gate::none, "none"}, {Gate::scalar, "scalar"},
//                                             {Gate::vector, "vector"}});
//   std::string to_string(Gate gate) { return kGateNames.name(gate); }
//   Gate parse_gate(const std::string& name) { return kGateNames.parse(name); }
//   // configs read it as config.get_parsed("decoder.gate", parse_gate)
//
// A name not in the table is a std::invalid_argument naming the value and the choices:
// "Unknown gate 'wide'; expected none, scalar or vector".
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace saccade {

template <typename Enum>
class EnumNames {
 public:
  // `what` names the value in messages; `names` pairs every enumerator with its name.
  EnumNames(std::string what, std::vector<std::pair<Enum, std::string>> names)
      : what_(std::move(what)), names_(std::move(names)) {}

  const std::string& name(Enum value) const {
    for (const auto& [entry, name] : names_) {
      if (entry == value) return name;
    }
    throw std::logic_error("The " + what_ + " table misses a value");
  }

  Enum parse(const std::string& text) const {
    for (const auto& [entry, name] : names_) {
      if (name == text) return entry;
    }
    throw std::invalid_argument("Unknown " + what_ + " '" + text + "'; expected " + choices());
  }

  // Every enumerator, in the table's order.
  std::vector<Enum> values() const {
    std::vector<Enum> all;
    for (const auto& entry : names_) all.push_back(entry.first);
    return all;
  }

  // "a, b or c".
  std::string choices() const {
    std::string text;
    for (size_t i = 0; i < names_.size(); ++i) {
      text += (i == 0 ? "" : i + 1 == names_.size() ? " or " : ", ") + names_[i].second;
    }
    return text;
  }

 private:
  std::string what_;
  std::vector<std::pair<Enum, std::string>> names_;
};

}  // namespace saccade
