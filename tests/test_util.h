// Helpers shared by the test binaries: scratch folders, file writing, running the CLI.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace saccade::testing {

// A fresh, empty folder under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

// Writes `text` to `path`, creating parent folders.
void write_file(const std::filesystem::path& path, const std::string& text);

// Reads a whole file; throws if it cannot be opened.
std::string read_file(const std::filesystem::path& path);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs the saccade binary with `args` in `working_dir` (default: the source tree), capturing
// stdout and stderr separately. Arguments are shell-quoted.
CommandResult run_saccade(
    const std::vector<std::string>& args, const std::filesystem::path& working_dir = {});

// The repository's source folder (for configs/).
std::filesystem::path source_dir();

}  // namespace saccade::testing
