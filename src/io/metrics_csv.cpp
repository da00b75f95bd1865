// MetricsCsv implementation.
#include "io/metrics_csv.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

namespace saccade {

MetricsCsv::MetricsCsv(const std::filesystem::path& path, std::vector<std::string> columns)
    : path_(path), columns_(std::move(columns)) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  out_.open(path, std::ios::trunc);
  if (!out_) throw std::runtime_error("Could not write " + path.string() + ": " + std::strerror(errno));
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
  // errno still holds the failed write's reason (a full disk: ENOSPC).
  if (!out_) throw std::runtime_error("Could not write " + path_.string() + ": " + std::strerror(errno));
}

std::string MetricsCsv::number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.8g", value);
  return text;
}

std::optional<double> MetricsTable::number(
    const std::map<std::string, std::string>& row, const std::string& column) {
  const auto it = row.find(column);
  if (it == row.end()) return std::nullopt;
  return std::strtod(it->second.c_str(), nullptr);
}

namespace {

std::vector<std::string> split_cells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream stream(line);
  while (std::getline(stream, cell, ',')) cells.push_back(cell);
  if (!line.empty() && line.back() == ',') cells.emplace_back();
  return cells;
}

bool is_number(const std::string& text) {
  char* end = nullptr;
  std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size();
}

}  // namespace

MetricsTable read_metrics_csv(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("Could not read " + path.string());
  MetricsTable table;
  std::string line;
  if (!std::getline(in, line)) return table;
  table.columns = split_cells(line);
  for (int line_number = 2; std::getline(in, line); ++line_number) {
    // Every complete row ends in a newline; a last line without one was cut off mid-write.
    if (in.eof()) break;
    const std::vector<std::string> cells = split_cells(line);
    const std::string where = path.string() + ":" + std::to_string(line_number) + ": ";
    if (cells.size() > table.columns.size()) {
      throw std::invalid_argument(
          where + std::to_string(cells.size()) + " cells, but the header names " +
          std::to_string(table.columns.size()) + " columns");
    }
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < cells.size(); ++i) {
      if (cells[i].empty()) continue;
      if (table.columns[i] != "kind" && !is_number(cells[i])) {
        throw std::invalid_argument(
            where + "column '" + table.columns[i] + "' holds '" + cells[i] + "', expected a number");
      }
      row[table.columns[i]] = cells[i];
    }
    table.rows.push_back(std::move(row));
  }
  return table;
}

}  // namespace saccade
