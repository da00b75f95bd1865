// MetricsCsv: metrics.csv of a run, one row per logged training step and per validation.
//
//   MetricsCsv csv(run_dir / "metrics.csv", {"kind", "epoch", "step", "loss"});
//   csv.write({{"kind", "train"}, {"epoch", "1"}, {"step", "20"}, {"loss", "2.31"}});
//
// The header is fixed at construction; a row names its columns, and absent ones stay empty, so
// training and validation rows share one file. Every row is flushed as it is written.
//
//   MetricsTable table = read_metrics_csv(run_dir / "metrics.csv");   // for the report
//   for (const auto& row : table.rows) if (row.at("kind") == "val") ... table.number(row, "bleu4") ...
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
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

// A metrics.csv read back: rows as column -> text, empty cells absent.
struct MetricsTable {
  std::vector<std::string> columns;
  std::vector<std::map<std::string, std::string>> rows;

  // The value of `column` in `row` as a number; std::nullopt when the cell is empty.
  static std::optional<double> number(
      const std::map<std::string, std::string>& row, const std::string& column);
};

// Reads a file MetricsCsv wrote (a row cut short by a kill is dropped). A missing file is a
// std::runtime_error naming it; a row with more cells than the header or a cell that is not a
// number (outside the `kind` column) a std::invalid_argument "path:line: ...".
MetricsTable read_metrics_csv(const std::filesystem::path& path);

}  // namespace saccade
