// JoinWatchdog: bounds a rank's joining of its job by dist.timeout_s, whatever c10d does.
//
//   JoinWatchdog watchdog(options.timeout, "rank 1 could not reach the rendezvous at node0:29500");
//   ...                                    // c10d calls; the rank's own waits stop at deadline()
//   watchdog.set_step("rank 1 could not connect to its peers through node0:29500");
//   ...
//   }                                      // destroyed: joining is over
//
// c10d's calls cannot be interrupted, and some never return: a peer that accepts connections
// and never answers (another program's port, a stopped rank 0) blocks them for ever. A second
// past the deadline the watchdog ends the process with one line on stderr, "saccade: error:
// <step>: no answer within dist.timeout_s = N s", and exit code 1. While any watchdog lives,
// c10d's own log lines are off (saccade's line says what failed), and an exception escaping one
// of c10d's threads (LibTorch 1.13's store client reading junk from a peer that is no store)
// ends the process the same way, "<step>: <the exception's message>", instead of aborting.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace saccade {

class JoinWatchdog {
 public:
  JoinWatchdog(std::chrono::seconds timeout, const std::string& step);
  ~JoinWatchdog();
  JoinWatchdog(const JoinWatchdog&) = delete;
  JoinWatchdog& operator=(const JoinWatchdog&) = delete;

  // What the rank is doing now, as the start of its error line: "rank 1 could not ...".
  void set_step(const std::string& step);
  std::string step() const;
  // When joining should be over: the rank's own waits give up here, with their own message.
  std::chrono::steady_clock::time_point deadline() const { return deadline_; }
  // "dist.timeout_s = 300 s", for messages.
  std::string timeout_text() const;

 private:
  void watch();

  const std::chrono::seconds timeout_;
  const std::chrono::steady_clock::time_point deadline_;
  mutable std::mutex mutex_;
  std::condition_variable finished_changed_;
  bool finished_ = false;  // under mutex_
  std::string step_;       // under mutex_
  std::thread thread_;
};

}  // namespace saccade
