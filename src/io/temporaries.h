// Temporaries: what a writer fills beside its target before renaming it into place, so readers
// never see a torn file or folder. A kill (or a full disk that stops the process) leaves them
// behind; the next writer of the same target removes those of processes that no longer run.
//
//   const auto temporary = temporary_for(cache);   // <cache>.tmp-<pid>
//   remove_stale_temporaries(cache);               // <cache>.tmp-<dead pid>, and the older <cache>.tmp<pid>
//   remove_stale_temporaries_within(run);          // every <anything>.tmp-<dead pid> under run/
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace saccade {

// Removes `path` and, for a folder, everything under it (a symbolic link itself, never what it
// points to), as std::filesystem::remove_all does; a missing path removes nothing. Returns how many
// entries went. The throwing form raises std::runtime_error naming the entry that could not go and
// the system's reason; the other sets `error` and returns what went before it.
// std::filesystem::remove_all is not called: with libstdc++ linked statically (a GCC configured
// so), an executable beside PyTorch 2.11's pip LibTorch takes LibTorch's copy of it, which jumps to
// address 0 (docs/building.md, "Building against another LibTorch").
std::uintmax_t remove_tree(const std::filesystem::path& path);
std::uintmax_t remove_tree(const std::filesystem::path& path, std::error_code& error);

// `target` + ".tmp-" + this process's id.
std::filesystem::path temporary_for(const std::filesystem::path& target);

// Removes the files and folders beside `target` named like temporaries of it whose process is
// gone (on this machine: a folder shared with other machines may hold their live ones, which are
// kept only when their id is alive here too). Logs each; returns how many.
int remove_stale_temporaries(const std::filesystem::path& target);

// The same for every temporary anywhere under `folder` (a run a killed process was writing, when
// another process resumes it), whatever its target, in the current naming (.tmp-<pid>) only.
// Returns how many.
int remove_stale_temporaries_within(const std::filesystem::path& folder);

// Moves the folder `staged` (a temporary_for(dir) filled by a writer) to `dir`, exchanging the two
// atomically when `dir` already exists, then removes what `dir` held: readers see the old folder
// or the new one, never a mix. Throws std::runtime_error naming `dir`.
void swap_into_place(const std::filesystem::path& staged, const std::filesystem::path& dir);

// The one checked writer of every file a run keeps: a temporary beside the target, renamed into
// place by commit(). Every write is checked: a failure (a full disk) throws std::runtime_error
// naming the target and the system's reason, and the temporary is removed, as it is when the
// writer goes away uncommitted, so what stood at the target before stays whole.
//
//   AtomicFile file(path);   // creates the folders, removes stale temporaries, opens
//   file.write(bytes);       // appends
//   file.commit();           // checked close, rename
class AtomicFile {
 public:
  explicit AtomicFile(const std::filesystem::path& target);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t size);
  void write(const std::string& bytes) { write(bytes.data(), bytes.size()); }
  // Overwrites bytes already written, at `offset` from the start (a header filled in last).
  void write_at(uint64_t offset, const void* data, size_t size);
  void commit();

 private:
  [[noreturn]] void fail(const std::string& what, int error);

  std::filesystem::path target_;
  std::filesystem::path temporary_;
  int fd_ = -1;
  uint64_t end_ = 0;  // bytes written so far: where write() appends
  bool committed_ = false;
};

// Writes `bytes` to `path` through an AtomicFile.
void write_file_atomically(const std::filesystem::path& path, const std::string& bytes);

}  // namespace saccade
