// Helpers shared by the test binaries: scratch folders, file writing, running the CLI.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
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

// Runs the saccade binary with `args` in `working_dir` (default: the source tree), with
// `environment` added to this process's, capturing stdout and stderr separately. Arguments are
// shell-quoted.
CommandResult run_saccade(
    const std::vector<std::string>& args,
    const std::filesystem::path& working_dir = {},
    const std::map<std::string, std::string>& environment = {});

// The same for any program: argv[0] is the program.
CommandResult run_program(
    const std::vector<std::string>& argv,
    const std::filesystem::path& working_dir = {},
    const std::map<std::string, std::string>& environment = {});

// The message of the `Error` that `body` must throw; a test failure (and "") when it throws none.
template <typename Error, typename Body>
std::string message_of(Body body) {
  try {
    body();
  } catch (const Error& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

// A program running beside the test, its stdout and stderr into `log`; stopped with SIGKILL if
// it still runs when the object goes.
class ChildProcess {
 public:
  ChildProcess(
      const std::vector<std::string>& argv,
      const std::filesystem::path& working_dir,
      const std::filesystem::path& log);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  int pid() const { return pid_; }
  // Whether it has not exited yet.
  bool running();
  // Sends `signal`, waits up to `grace_s` seconds (then SIGKILL), and returns the exit code (128 +
  // the signal when a signal ended it).
  int stop(int signal, int grace_s = 20);

 private:
  int pid_ = -1;
  int status_ = -1;  // the wait status once reaped
};

// A TCP port nobody listens on now on loopback (bound to port 0, then released).
int free_port();

// The repository's source folder (for configs/).
std::filesystem::path source_dir();

// The shipped configs, <source>/configs.
std::filesystem::path configs();

}  // namespace saccade::testing
