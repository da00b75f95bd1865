// Temporaries beside their targets, and removing the ones dead processes left (see temporaries.h).
#include "io/temporaries.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "io/log.h"

namespace saccade {
namespace {

// Whether process `pid` runs on this machine (one we may not signal runs too). A zombie, killed
// but not yet reaped (in a container whose first process does not reap, it can stay a while),
// runs no more.
bool process_alive(long pid) {
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return true;
  // "<pid> (<command, may hold spaces and parentheses>) <state> ..."
  const size_t command_end = line.rfind(')');
  if (command_end == std::string::npos || command_end + 2 >= line.size()) return true;
  const char state = line[command_end + 2];
  return state != 'Z' && state != 'X';
}

// What remove_tree did: how many entries went, and the errno of the first that could not (0 when
// none) with its path.
struct TreeRemoval {
  std::uintmax_t removed = 0;
  int error = 0;
  std::filesystem::path failed;

  bool fail(const std::filesystem::path& path, int code) {
    error = code;
    failed = path;
    return false;
  }
};

// Removes the entry `name` of the folder open as `parent` (AT_FDCWD: the working folder), what it
// holds first; `path` names it in messages. false once something could not go.
bool remove_entry(
    int parent, const std::string& name, const std::filesystem::path& path, TreeRemoval& removal) {
  struct stat info;
  if (::fstatat(parent, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT || removal.fail(path, errno);
  const bool folder = S_ISDIR(info.st_mode);
  if (folder) {
    const int fd = ::openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR* entries = fd < 0 ? nullptr : ::fdopendir(fd);
    if (entries == nullptr) {
      const int code = errno;
      if (fd >= 0) ::close(fd);
      return removal.fail(path, code);
    }
    bool removed_all = true;
    while (removed_all) {
      errno = 0;
      const dirent* entry = ::readdir(entries);
      if (entry == nullptr) {
        if (errno != 0) removed_all = removal.fail(path, errno);
        break;
      }
      const std::string child = entry->d_name;
      if (child != "." && child != "..")
        removed_all = remove_entry(::dirfd(entries), child, path / child, removal);
    }
    ::closedir(entries);
    if (!removed_all) return false;
  }
  if (::unlinkat(parent, name.c_str(), folder ? AT_REMOVEDIR : 0) != 0 && errno != ENOENT)
    return removal.fail(path, errno);
  ++removal.removed;
  return true;
}

TreeRemoval remove_whole(const std::filesystem::path& path) {
  TreeRemoval removal;
  remove_entry(AT_FDCWD, path.string(), path, removal);
  return removal;
}

// A temporary's name, `<target>.tmp-<pid>` (or the older `<target>.tmp<pid>`), taken apart.
struct TemporaryName {
  std::string target;
  long pid = 0;
  bool older_naming = false;  // .tmp<pid>
};

std::optional<TemporaryName> parse_temporary_name(const std::string& name) {
  const size_t marker = name.rfind(".tmp");
  if (marker == std::string::npos || marker == 0) return std::nullopt;
  std::string digits = name.substr(marker + 4);
  const bool older_naming = digits.empty() || digits.front() != '-';
  if (!older_naming) digits.erase(0, 1);
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  for (const char c : digits)
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return TemporaryName{name.substr(0, marker), std::stol(digits), older_naming};
}

// Removes each of `candidates` that names a temporary whose process is gone: with a
// `target_name`, that target's in either naming; without, any target's in the current naming
// only (a whole folder's names are not all ours); logs each; returns how many.
int remove_if_stale(const std::vector<std::filesystem::path>& candidates, const std::string* target_name) {
  int removed = 0;
  for (const auto& path : candidates) {
    const auto temporary = parse_temporary_name(path.filename().string());
    if (!temporary || (target_name ? temporary->target != *target_name : temporary->older_naming) ||
        process_alive(temporary->pid))
      continue;
    std::error_code ignored;
    if (remove_tree(path, ignored) > 0) {
      log::info() << "Removed " << path.string() << ", left by process " << temporary->pid
                  << " that no longer runs";
      ++removed;
    }
  }
  return removed;
}

}  // namespace

std::uintmax_t remove_tree(const std::filesystem::path& path, std::error_code& error) {
  const TreeRemoval removal = remove_whole(path);
  error = std::error_code(removal.error, std::generic_category());
  return removal.removed;
}

std::uintmax_t remove_tree(const std::filesystem::path& path) {
  const TreeRemoval removal = remove_whole(path);
  if (removal.error != 0)
    throw std::runtime_error(
        "Could not remove " + removal.failed.string() + ": " + std::strerror(removal.error));
  return removal.removed;
}

void swap_into_place(const std::filesystem::path& staged, const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) {
    std::filesystem::rename(staged, dir);
    return;
  }
  if (renameat2(AT_FDCWD, staged.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) != 0)
    throw std::runtime_error("Could not replace " + dir.string() + ": " + std::strerror(errno));
  remove_tree(staged);  // now holds the previous folder
}

std::filesystem::path temporary_for(const std::filesystem::path& target) {
  return target.string() + ".tmp-" + std::to_string(::getpid());
}

int remove_stale_temporaries(const std::filesystem::path& target) {
  const std::filesystem::path folder = target.has_parent_path() ? target.parent_path() : ".";
  std::vector<std::filesystem::path> beside;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(folder, error)) beside.push_back(entry.path());
  const std::string target_name = target.filename().string();
  return remove_if_stale(beside, &target_name);
}

int remove_stale_temporaries_within(const std::filesystem::path& folder) {
  std::vector<std::filesystem::path> within;
  std::error_code error;  // a folder that cannot be read ends the walk: what was found still goes
  for (auto entry = std::filesystem::recursive_directory_iterator(
           folder, std::filesystem::directory_options::skip_permission_denied, error);
       entry != std::filesystem::recursive_directory_iterator(); entry.increment(error)) {
    within.push_back(entry->path());
    // A stale temporary folder goes whole; what it holds is not looked into.
    if (parse_temporary_name(entry->path().filename().string())) entry.disable_recursion_pending();
  }
  return remove_if_stale(within, nullptr);
}

AtomicFile::AtomicFile(const std::filesystem::path& target)
    : target_(target), temporary_(temporary_for(target)) {
  std::error_code error;
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), error);
  remove_stale_temporaries(target);
  fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("open", errno);
}

AtomicFile::~AtomicFile() {
  if (committed_) return;
  if (fd_ >= 0) ::close(fd_);
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void AtomicFile::fail(const std::string& what, int error) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
  committed_ = true;  // nothing left to clean up
  throw std::runtime_error(
      "Could not write " + target_.string() + " (" + what + "): " + std::strerror(error) +
      (error == ENOSPC ? "; what was there before is unchanged" : ""));
}

void AtomicFile::write(const void* data, size_t size) {
  write_at(end_, data, size);
  end_ += size;
}

void AtomicFile::write_at(uint64_t offset, const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t written = ::pwrite(fd_, bytes, size, static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) fail("write", written < 0 ? errno : ENOSPC);
    bytes += written;
    offset += static_cast<uint64_t>(written);
    size -= static_cast<size_t>(written);
  }
}

void AtomicFile::commit() {
  const int fd = fd_;
  fd_ = -1;  // closed below, whatever close says
  if (::close(fd) != 0) fail("close", errno);
  std::error_code error;
  std::filesystem::rename(temporary_, target_, error);
  if (error) fail("rename", error.value());
  committed_ = true;
}

void write_file_atomically(const std::filesystem::path& path, const std::string& bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace saccade
