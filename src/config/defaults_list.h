// Hydra 1.3's defaults list (not part of the public API): building the defaults tree of the
// config files (config_repository.h) with the command line's group overrides, and flattening it
// into merge order.
//
// The tree is built as Hydra builds it: each file's `defaults:` entries are visited last to
// first, so an `override /group: x` in a file late in the list (an experiment) is registered
// before the group it changes is reached; the first registration of a group wins, and the
// command line registers first. Nested entries are relative to the including file's group
// and package. A file's own content goes where its `_self_` is (appended last if absent).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "config/config_repository.h"
#include "config/overrides.h"

namespace saccade::config_detail {

struct DefaultsList {
  std::vector<DefaultsEntry> entries;                                       // merge order
  std::vector<std::pair<std::string, std::optional<std::string>>> choices;  // depth-first order
};

// The final defaults list of the primary config `config_name`, with the group overrides
// (`db=x`, `+db=x`, `~db`) applied. Throws ConfigError with Hydra's messages.
DefaultsList build_defaults_list(
    ConfigRepository& repo, const std::string& config_name, const std::vector<Override>& group_overrides);

}  // namespace saccade::config_detail
