// MetricsCsv: metrics.csv of a run, one row per logged training step and per validation.
//
//   MetricsCsv csv(run_dir / "metrics.csv", {"kind", "epoch", "step", "loss"});
//   csv.write({{"kind", "train"}, {"epoch", "1"}, {"step", "20"}, {"loss", "2.31"}});
//
// The header is fixed at construction; a row names its columns, and absent ones stay empty, so
// training and validation rows share one file. Every row is flushed as it is written.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace saccade {

class MetricsCsv {
 public:
  // Creates (truncates) `path` and writes the header line.
  MetricsCsv(const std::filesystem::path& path, std::vector<std::string> columns);

  // Writes one row; throws std::invalid_argument for a column not in the header.
  void write(const std::map<std::string, std::string>& row);

  // A number as the CSV shows it: up to 8 significant digits.
  static std::string number(double value);

 private:
  std::filesystem::path path_;
  std::vector<std::string> columns_;
  std::ofstream out_;
};

}  // namespace saccade
