// MetricsCsv implementation.
#include "io/metrics_csv.h"

#include <cstdio>
#include <stdexcept>

namespace saccade {

MetricsCsv::MetricsCsv(const std::filesystem::path& path, std::vector<std::string> columns)
    : path_(path), columns_(std::move(columns)) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  out_.open(path, std::ios::trunc);
  if (!out_) throw std::runtime_error("Could not write " + path.string());
  for (size_t i = 0; i < columns_.size(); ++i) out_ << (i ? "," : "") << columns_[i];
  out_ << '\n' << std::flush;
}

void MetricsCsv::write(const std::map<std::string, std::string>& row) {
  for (const auto& [column, value] : row) {
    bool known = false;
    for (const auto& name : columns_) known = known || name == column;
    if (!known) throw std::invalid_argument("metrics.csv has no column '" + column + "'");
  }
  for (size_t i = 0; i < columns_.size(); ++i) {
    const auto it = row.find(columns_[i]);
    out_ << (i ? "," : "") << (it == row.end() ? "" : it->second);
  }
  out_ << '\n' << std::flush;
  if (!out_) throw std::runtime_error("Could not write " + path_.string());
}

std::string MetricsCsv::number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.8g", value);
  return text;
}

}  // namespace saccade
