// RunLog: metrics.csv rows mirrored as TensorBoard scalars (see run_log.h).
#include "io/run_log.h"

#include <cstdlib>
#include <utility>

namespace saccade {

RunLog::RunLog(const std::filesystem::path& run_dir, std::vector<std::string> columns, bool tensorboard)
    : csv_(run_dir / "metrics.csv", std::move(columns)) {
  if (tensorboard) events_.emplace(run_dir);
}

void RunLog::write(const std::map<std::string, std::string>& row, int64_t step) {
  csv_.write(row);
  if (!events_) return;
  for (const auto& [column, value] : row) {
    if (column == "kind" || column == "epoch" || column == "step") continue;
    // strtod, not stod: a subnormal (a learning rate decayed far enough) is a number, not an error.
    events_->add_scalar(row.at("kind") + "/" + column, std::strtod(value.c_str(), nullptr), step);
  }
}

}  // namespace saccade
