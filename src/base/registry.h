// Registry: a name -> builder map with one behaviour for every kind of thing saccade builds by
// name (attention kinds, encoders, dataset kinds).
//
//   Registry<AttentionBuilder>& attention_registry() {
//     static Registry<AttentionBuilder> registry("attention kind", {{"additive", make_additive}});
//     return registry;
//   }
//   attention_registry().add("mine", make_mine);    // a user's own; a taken name is an error
//   Builder build = attention_registry().get(name);  // an unknown name lists the known ones
//
// Each registry is a function-local static whose built-ins are given to its constructor, so they
// are in place on first use, before any other entry; never static self-registration (the linker
// drops unreferenced objects of static libraries). Every member is thread-safe.
#pragma once

#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "base/text.h"

namespace saccade {

template <typename Builder>
class Registry {
 public:
  using Entries = std::vector<std::pair<std::string, Builder>>;

  // `what` names an entry in messages ("attention kind"); `builtins` are the built-in entries.
  Registry(std::string what, Entries builtins) : what_(std::move(what)) {
    for (auto& [name, builder] : builtins) add(name, std::move(builder));
  }

  // Adds `builder` under `name`. Throws std::invalid_argument when the name is taken.
  void add(const std::string& name, Builder builder) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!entries_.emplace(name, std::move(builder)).second) {
      throw std::invalid_argument("Cannot register " + what_ + " '" + name + "': the name is taken");
    }
  }

  // The builder of `name`. Throws std::invalid_argument naming the value and the known names,
  // after the config key that chose it when one is given: "decoder.attention.kind: Unknown
  // attention kind 'x'; known attention kinds: additive, dot, ...".
  Builder get(const std::string& name, const std::string& key = "") const {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto found = entries_.find(name);
    if (found == entries_.end()) {
      throw std::invalid_argument(
          (key.empty() ? "" : key + ": ") + "Unknown " + what_ + " '" + name + "'; known " + what_ +
          "s: " + join(names_locked(), ", "));
    }
    return found->second;
  }

  // Throws as get() does unless `name` is registered.
  void check(const std::string& name, const std::string& key = "") const { get(name, key); }

  // The registered names, sorted.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return names_locked();
  }

 private:
  std::vector<std::string> names_locked() const {
    std::vector<std::string> names;
    for (const auto& entry : entries_) names.push_back(entry.first);
    return names;
  }

  std::string what_;
  mutable std::mutex mutex_;
  std::map<std::string, Builder> entries_;
};

}  // namespace saccade
