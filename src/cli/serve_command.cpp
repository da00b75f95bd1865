// `saccade serve`: the attention explorer. Loads every --run once (decode/trained_run.h, as
// caption and eval do), then serves serve/explorer_server.h's page and API until SIGINT or
// SIGTERM. A port that cannot be bound is one line naming host:port, and the exit code 1.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "decode/trained_run.h"
#include "io/log.h"
#include "serve/explorer.h"
#include "serve/explorer_server.h"

namespace saccade::cli {
namespace {

std::vector<ExploredRun> load_runs(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const auto given = invocation.flag_values.find("--run");
  if (given == invocation.flag_values.end())
    throw std::invalid_argument("saccade serve needs --run DIR (a training run folder; repeat for more)");
  std::vector<ExploredRun> runs;
  for (const std::string& dir : given->second) {
    runs.push_back(
        {load_trained_run(dir, job.request(), job.placement, invocation.flag("--checkpoint", "best")),
         run_choices(dir, job.request())});
    log::info() << "Loaded " << dir << " (epoch " << runs.back().trained.epoch << ")";
  }
  return runs;
}

std::string url_of(const std::string& host, int port) {
  const bool ipv6 = host.find(':') != std::string::npos;
  return "http://" + (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + "/";
}

// SIGINT and SIGTERM write their number here; a thread reads it and stops the server. (A handler
// may only make async-signal-safe calls, and any thread, LibTorch's included, may receive them.)
int stop_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int signal) {
  const char number = static_cast<char>(signal);
  [[maybe_unused]] const ssize_t written = write(stop_pipe[1], &number, 1);
}

// Stops `server` at SIGINT or SIGTERM while it lives; then the signals' defaults come back.
class StopOnSignal {
 public:
  explicit StopOnSignal(ExplorerServer& server) {
    if (pipe(stop_pipe) != 0) throw std::runtime_error("cannot make a pipe for the stop signals");
    struct sigaction action {};
    action.sa_handler = on_stop_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    sigaction(SIGINT, &action, nullptr);
    sigaction(SIGTERM, &action, nullptr);
    waiter_ = std::thread([&server] {
      char number = 0;
      while (read(stop_pipe[0], &number, 1) < 0 && errno == EINTR) {
      }
      if (number != 0) {
        log::info() << "Stopping (" << strsignal(number) << ")";
        // A signal just before run() started listening must still stop it.
        for (int waited = 0; !server.running() && waited < 500; ++waited)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
      server.stop();
    });
  }
  ~StopOnSignal() {
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    on_stop_signal(0);  // wakes the waiter when no signal came
    waiter_.join();
    close(stop_pipe[0]);
    close(stop_pipe[1]);
  }
  StopOnSignal(const StopOnSignal&) = delete;
  StopOnSignal& operator=(const StopOnSignal&) = delete;

 private:
  std::thread waiter_;
};

}  // namespace

int run_serve(const Job& job) {
  if (job.invocation->multirun)
    throw std::invalid_argument("saccade serve serves one configuration: -m (a sweep) does not apply to it");
  ServeOptions options = serve_options_from(job.composition.config);
  options.host = job.invocation->flag("--host", "127.0.0.1");
  options.port = static_cast<int>(
      job.invocation->integer_flag("--port", "8080", 0, 65535, "a TCP port, 0 to 65535 (0: any free port)"));
  Explorer explorer(load_runs(job));
  ExplorerServer server(explorer, options);
  const int port = server.bind();
  if (!is_loopback(options.host)) {
    log::warn() << "Listening on " << options.host << " (--host): anyone who can reach this machine on port "
                << port << " can use the explorer and its runs";
  }
  bool served = false;
  {
    const StopOnSignal stop_on_signal(server);
    log::info() << "The attention explorer is at " << url_of(options.host, port) << " (Ctrl-C stops it)";
    served = server.run();
  }
  if (!served)
    throw std::runtime_error("the server on " + url_of(options.host, port) + " stopped with an error");
  return 0;
}

}  // namespace saccade::cli
