// The watchdog of a rank's joining (see join_watchdog.h).
#include "dist/join_watchdog.h"

#include <c10/util/Logging.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <vector>

#include "base/text.h"

namespace saccade {
namespace {

// Past the deadline, the rank's own waits get this long to give up with their own message
// before the watchdog ends the process.
constexpr std::chrono::seconds kGrace{1};
// c10's FATAL level: c10d logs nothing below it.
constexpr int kC10LogLevelFatal = 3;

// Writes "saccade: error: <message>" and ends the process at once: the stuck thread cannot be
// unwound, and exit handlers could wait for it.
[[noreturn]] void end_process(const std::string& message) {
  const std::string line = "saccade: error: " + escape_control_characters(message) + "\n";
  const ssize_t written = ::write(STDERR_FILENO, line.data(), line.size());
  static_cast<void>(written);
  std::_Exit(1);
}

// The watchdogs alive in this process (the tests join two ranks from threads of one process),
// and what the first of them replaced.
struct LiveWatchdogs {
  std::mutex mutex;
  std::vector<const JoinWatchdog*> watchdogs;
  std::terminate_handler previous_terminate = nullptr;
  int previous_log_level = 0;
};

LiveWatchdogs& live_watchdogs() {
  static LiveWatchdogs live;
  return live;
}

// std::terminate while joining: an exception escaped one of c10d's threads.
[[noreturn]] void end_process_on_terminate() {
  std::string cause = "LibTorch's c10d failed";
  try {
    if (const std::exception_ptr error = std::current_exception()) std::rethrow_exception(error);
  } catch (const std::exception& error) {
    cause = first_line(error.what());
  } catch (...) {
  }
  std::string step = "a rank could not join its job";
  {
    LiveWatchdogs& live = live_watchdogs();
    std::lock_guard<std::mutex> lock(live.mutex);
    if (!live.watchdogs.empty()) step = live.watchdogs.back()->step();
  }
  end_process(step + ": " + cause);
}

void add_live_watchdog(const JoinWatchdog* watchdog) {
  LiveWatchdogs& live = live_watchdogs();
  std::lock_guard<std::mutex> lock(live.mutex);
  if (live.watchdogs.empty()) {
    live.previous_terminate = std::set_terminate(end_process_on_terminate);
    live.previous_log_level = FLAGS_caffe2_log_level;
    FLAGS_caffe2_log_level = std::max<int>(live.previous_log_level, kC10LogLevelFatal);
  }
  live.watchdogs.push_back(watchdog);
}

void remove_live_watchdog(const JoinWatchdog* watchdog) {
  LiveWatchdogs& live = live_watchdogs();
  std::lock_guard<std::mutex> lock(live.mutex);
  live.watchdogs.erase(std::find(live.watchdogs.begin(), live.watchdogs.end(), watchdog));
  if (live.watchdogs.empty()) {
    std::set_terminate(live.previous_terminate);
    FLAGS_caffe2_log_level = live.previous_log_level;
  }
}

}  // namespace

JoinWatchdog::JoinWatchdog(std::chrono::seconds timeout, const std::string& step)
    : timeout_(timeout), deadline_(std::chrono::steady_clock::now() + timeout), step_(step) {
  add_live_watchdog(this);
  try {
    thread_ = std::thread([this] { watch(); });
  } catch (...) {
    remove_live_watchdog(this);
    throw;
  }
}

JoinWatchdog::~JoinWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
  }
  finished_changed_.notify_all();
  thread_.join();
  remove_live_watchdog(this);
}

void JoinWatchdog::set_step(const std::string& step) {
  std::lock_guard<std::mutex> lock(mutex_);
  step_ = step;
}

std::string JoinWatchdog::step() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return step_;
}

std::string JoinWatchdog::timeout_text() const {
  return "dist.timeout_s = " + std::to_string(timeout_.count()) + " s";
}

void JoinWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (finished_changed_.wait_until(lock, deadline_ + kGrace, [this] { return finished_; })) return;
  end_process(step_ + ": no answer within " + timeout_text());
}

}  // namespace saccade
