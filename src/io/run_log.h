// RunLog: the numbers a run logs, into metrics.csv and, when enabled, TensorBoard event files.
//
//   RunLog log(run_dir, {"kind", "epoch", "step", "loss"}, /*tensorboard=*/true);
//   log.write({{"kind", "train"}, {"epoch", "1"}, {"step", "20"}, {"loss", "2.31"}}, 20);
//   if (EventWriter* events = log.events()) events->add_text("config", "...", 0);
//
// Every row goes to metrics.csv, and each of its numbers to TensorBoard as the scalar
// "<kind>/<column>" at `step` (kind, epoch and step themselves are not charted).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/metrics_csv.h"
#include "io/tensorboard_events.h"

namespace saccade {

class RunLog {
 public:
  // Creates run_dir/metrics.csv with `columns`, and an event file when `tensorboard` is on.
  RunLog(const std::filesystem::path& run_dir, std::vector<std::string> columns, bool tensorboard);

  void write(const std::map<std::string, std::string>& row, int64_t step);

  // The event file, for images and text; nullptr when TensorBoard logging is off.
  EventWriter* events() { return events_ ? &*events_ : nullptr; }

 private:
  MetricsCsv csv_;
  std::optional<EventWriter> events_;
};

}  // namespace saccade
