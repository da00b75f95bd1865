// The local launcher behind `saccade train --nproc N` (see launcher.h).
#include "cli/launcher.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

#include "io/log.h"

namespace saccade::cli {
namespace {

// A TCP port free on loopback now, for rank 0's rendezvous.
int free_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error(std::string("Could not open a socket: ") + std::strerror(errno));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof(address);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&address), &size) == 0;
  close(fd);
  if (!ok) throw std::runtime_error(std::string("Could not find a free port: ") + std::strerror(errno));
  return ntohs(address.sin_port);
}

// The environment of worker `rank`: this process's with torchrun's variables set.
std::vector<std::string> worker_environment(int rank, int nproc, int port) {
  const std::vector<std::pair<std::string, std::string>> job = {
      {"RANK", std::to_string(rank)},        {"LOCAL_RANK", std::to_string(rank)},
      {"WORLD_SIZE", std::to_string(nproc)}, {"LOCAL_WORLD_SIZE", std::to_string(nproc)},
      {"MASTER_ADDR", "127.0.0.1"},          {"MASTER_PORT", std::to_string(port)}};
  std::vector<std::string> environment;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string item = *entry;
    const std::string name = item.substr(0, item.find('='));
    bool replaced = false;
    for (const auto& variable : job) replaced = replaced || variable.first == name;
    if (!replaced) environment.push_back(item);
  }
  for (const auto& [name, value] : job) environment.push_back(name + "=" + value);
  return environment;
}

// Starts a worker. Everything it needs is built before fork: between fork and exec only
// async-signal-safe calls run (other threads may hold locks). It dies with the launcher.
pid_t start_worker(int rank, int nproc, int port, const std::vector<std::string>& argv) {
  const std::vector<std::string> environment = worker_environment(rank, nproc, port);
  std::vector<char*> args, envp;
  for (const auto& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  for (const auto& item : environment) envp.push_back(const_cast<char*>(item.c_str()));
  envp.push_back(nullptr);
  const pid_t launcher = getpid();
  const pid_t pid = fork();
  if (pid < 0)
    throw std::runtime_error(
        std::string("Could not start worker ") + std::to_string(rank) + ": " + std::strerror(errno));
  if (pid > 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != launcher) _exit(1);  // the launcher died before prctl took effect
  execve("/proc/self/exe", args.data(), envp.data());
  _exit(127);
}

// The exit code a wait status stands for (128 + signal for a killed worker, as shells report).
int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

// Stops the workers still running: SIGTERM, then SIGKILL for those alive after `grace`.
void stop(std::vector<pid_t>& running, std::chrono::seconds grace) {
  for (const pid_t pid : running) kill(pid, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  while (!running.empty() && std::chrono::steady_clock::now() < deadline) {
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      it = waitpid(*it, &status, WNOHANG) == *it ? running.erase(it) : it + 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  for (const pid_t pid : running) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
  running.clear();
}

}  // namespace

int max_local_workers() {
  return std::max(8, 4 * static_cast<int>(std::thread::hardware_concurrency()));
}

int launch_local_workers(int nproc, const std::vector<std::string>& argv) {
  const int port = free_port();
  std::vector<pid_t> running;
  std::vector<int> ranks;
  for (int rank = 0; rank < nproc; ++rank) {
    try {
      running.push_back(start_worker(rank, nproc, port, argv));
    } catch (const std::exception&) {
      stop(running, std::chrono::seconds(10));
      throw;
    }
    ranks.push_back(rank);
  }
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = wait(&status);
    if (pid < 0 && errno == EINTR) continue;
    if (pid < 0)
      throw std::runtime_error(std::string("Could not wait for the workers: ") + std::strerror(errno));
    for (size_t i = 0; i < running.size(); ++i) {
      if (running[i] != pid) continue;
      const int rank = ranks[i];
      running.erase(running.begin() + static_cast<long>(i));
      ranks.erase(ranks.begin() + static_cast<long>(i));
      const int code = exit_code(status);
      if (code == 0) break;
      log::error() << "worker " << rank << " of " << nproc << " failed (exit code " << code
                   << "); stopping the others";
      stop(running, std::chrono::seconds(10));
      return code;
    }
  }
  return 0;
}

}  // namespace saccade::cli
