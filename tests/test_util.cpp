// Test helpers: temp folders, files, and running the saccade binary as a user would.
#include "test_util.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "io/temporaries.h"

namespace saccade::testing {
namespace {

std::string shell_quote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

}  // namespace

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("saccade_test_" + std::to_string(getpid()) + "_" + std::to_string(counter++));
  remove_tree(path_);
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  remove_tree(path_, ignored);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  if (!out) throw std::runtime_error("Could not write " + path.string());
  out << text;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("Could not read " + path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

ChildProcess::ChildProcess(
    const std::vector<std::string>& argv,
    const std::filesystem::path& working_dir,
    const std::filesystem::path& log) {
  pid_ = fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out == nullptr || dup2(fileno(stdout), 2) < 0 || chdir(working_dir.c_str()) != 0) _exit(127);
    std::vector<char*> args;
    for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
}

ChildProcess::~ChildProcess() {
  if (running()) {
    kill(pid_, SIGKILL);
    waitpid(pid_, &status_, 0);
  }
}

bool ChildProcess::running() {
  if (status_ != -1) return false;
  return waitpid(pid_, &status_, WNOHANG) == 0 ? (status_ = -1, true) : false;
}

int ChildProcess::stop(int signal, int grace_s) {
  if (running()) {
    kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(grace_s);
    while (running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (running()) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status_, 0);
    }
  }
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) != 0) {
    throw std::runtime_error("no free port");
  }
  close(fd);
  return ntohs(address.sin_port);
}

std::filesystem::path source_dir() {
  return SACCADE_SOURCE_DIR;
}

std::filesystem::path configs() {
  return source_dir() / "configs";
}

CommandResult run_saccade(
    const std::vector<std::string>& args,
    const std::filesystem::path& working_dir,
    const std::map<std::string, std::string>& environment) {
  std::vector<std::string> argv = {SACCADE_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, working_dir, environment);
}

CommandResult run_program(
    const std::vector<std::string>& argv,
    const std::filesystem::path& working_dir,
    const std::map<std::string, std::string>& environment) {
  TempDir capture;
  const auto out_path = capture / "stdout";
  const auto err_path = capture / "stderr";
  std::string command =
      "cd " + shell_quote((working_dir.empty() ? source_dir() : working_dir).string()) + " && env";
  for (const auto& [name, value] : environment) command += " " + shell_quote(name + "=" + value);
  for (const auto& arg : argv) command += " " + shell_quote(arg);
  command += " </dev/null >" + shell_quote(out_path.string()) + " 2>" + shell_quote(err_path.string());
  const int status = std::system(command.c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_file(out_path);
  result.err = read_file(err_path);
  return result;
}

}  // namespace saccade::testing
