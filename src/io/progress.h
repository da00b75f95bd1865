// ProgressBar: one status line with count, rate, ETA and caller-supplied values.
//
//   ProgressBar bar(steps, "epoch 1", "img");
//   for (...) { ...; bar.advance(batch_size, {{"loss", loss}}); }
//   bar.finish();
//
// On a terminal the line is redrawn in place (at most ~10 times a second); when stderr is not
// a terminal (CI, redirected logs) it stays quiet except for one summary line from finish().
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace saccade {

class ProgressBar {
 public:
  // total: the count at completion (0 = unknown: no ETA). unit: what is counted ("img").
  ProgressBar(int64_t total, std::string label, std::string unit = "it");
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

  // Adds `count` finished items; `values` are shown after the rate ("loss 2.314").
  void advance(int64_t count, const std::vector<std::pair<std::string, double>>& values = {});

  // Ends the line and logs a one-line summary (count, elapsed, rate). Idempotent.
  void finish();

  // Items per second so far.
  double rate() const;

  // "1:02:03" / "02:03" for a duration in seconds (exposed for tests).
  static std::string format_duration(double seconds);

 private:
  std::string render() const;

  int64_t total_;
  int64_t done_ = 0;
  std::string label_;
  std::string unit_;
  std::vector<std::pair<std::string, double>> values_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  bool interactive_;
  bool finished_ = false;
};

}  // namespace saccade
