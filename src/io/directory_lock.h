// DirectoryLock: an exclusive flock(2) on a folder, held for the object's lifetime.
//
// Processes started together (a sweep, parallel tests) that write into one folder take turns:
//   const DirectoryLock lock(parent);   // waits while another process holds it
//   ...                                 // released when `lock` goes away
#pragma once

#include <filesystem>

namespace saccade {

class DirectoryLock {
 public:
  // Waits for the lock; throws std::runtime_error naming the folder if it cannot be locked.
  explicit DirectoryLock(const std::filesystem::path& folder);
  ~DirectoryLock();  // closing releases the lock
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_;
};

}  // namespace saccade
