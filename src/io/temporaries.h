// Temporaries: what a writer fills beside its target before renaming it into place, so readers
// never see a torn file or folder. A kill (or a full disk that stops the process) leaves them
// behind; the next writer of the same target removes those of processes that no longer run.
//
//   const auto temporary = temporary_for(cache);   // <cache>.tmp-<pid>
//   remove_stale_temporaries(cache);               // <cache>.tmp-<dead pid>, and the older <cache>.tmp<pid>
#pragma once

#include <filesystem>

namespace saccade {

// `target` + ".tmp-" + this process's id.
std::filesystem::path temporary_for(const std::filesystem::path& target);

// Removes the files and folders beside `target` named like temporaries of it whose process is
// gone (on this machine: a folder shared with other machines may hold their live ones, which are
// kept only when their id is alive here too). Logs each; returns how many.
int remove_stale_temporaries(const std::filesystem::path& target);

}  // namespace saccade
