// An exclusive flock(2) on a folder, held for the object's lifetime (see directory_lock.h).
#include "io/directory_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <stdexcept>

namespace saccade {

DirectoryLock::DirectoryLock(const std::filesystem::path& folder)
    : fd_(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) {
    if (fd_ >= 0) ::close(fd_);
    throw std::runtime_error("Could not lock " + folder.string());
  }
}

DirectoryLock::~DirectoryLock() {
  ::close(fd_);  // closing releases the lock
}

}  // namespace saccade
