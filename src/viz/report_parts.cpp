// The run and sweep pages' shared parts (see report_parts.h).
#include "viz/report_parts.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "io/run_folder.h"
#include "viz/svg_chart.h"

namespace saccade::report {

namespace fs = std::filesystem;

namespace {

constexpr const char* kStyle = R"(
body { font-family: sans-serif; margin: 24px auto; max-width: 1400px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 13px; } th, td { padding: 4px 10px; border-bottom: 1px solid #eee; }
th { text-align: left; background: #f5f5f5; } td.number { text-align: right; font-variant-numeric: tabular-nums; }
tr.best td { background: #eef6ee; font-weight: bold; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; font-size: 13px; } dt { color: #666; }
.charts { display: flex; flex-wrap: wrap; gap: 16px; }
figure.sample { margin: 0 0 24px 0; } figure.sample img { max-width: 100%; border: 1px solid #ddd; }
figcaption { font-size: 13px; } .generated { font-weight: bold; } .note { color: #777; font-size: 13px; }
pre { background: #f7f7f7; padding: 8px; font-size: 12px; overflow-x: auto; }
)";

// Throws the std::invalid_argument of a record's entry `key` that is missing or not `expected`.
[[noreturn]] void wrong_shape(
    const YAML::Node& value, const fs::path& file, const std::string& key, const char* expected) {
  if (!value) throw std::invalid_argument(file.string() + ": " + key + " is missing");
  const std::string shape = value.IsNull()       ? "null"
                            : value.IsSequence() ? "a list"
                            : value.IsMap()      ? "a mapping"
                                                 : "'" + value.Scalar() + "'";
  throw std::invalid_argument(file.string() + ": " + key + ": expected " + expected + ", got " + shape);
}

}  // namespace

YAML::Node read_record(const fs::path& path) {
  return yaml_mapping(read_yaml_file(path), path, "top level");
}

std::string yaml_string(const YAML::Node& value, const fs::path& file, const std::string& key) {
  if (!value || !value.IsScalar()) wrong_shape(value, file, key, "a string");
  return value.Scalar();
}

std::vector<std::string> yaml_strings(const YAML::Node& value, const fs::path& file, const std::string& key) {
  const YAML::Node list = yaml_list(value, file, key);
  std::vector<std::string> strings;
  for (size_t i = 0; i < list.size(); ++i)
    strings.push_back(yaml_string(list[i], file, key + "[" + std::to_string(i) + "]"));
  return strings;
}

YAML::Node yaml_list(const YAML::Node& value, const fs::path& file, const std::string& key) {
  if (!value || !value.IsSequence()) wrong_shape(value, file, key, "a list");
  return value;
}

YAML::Node yaml_mapping(const YAML::Node& value, const fs::path& file, const std::string& key) {
  if (!value || !value.IsMap()) wrong_shape(value, file, key, "a mapping");
  return value;
}

std::string fixed(double value, int decimals) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.*f", decimals, value);
  return text;
}

std::string html_page_start(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         xml_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n";
}

std::string number_cell(const std::optional<double>& value, int decimals) {
  return value ? "<td class=\"number\">" + fixed(*value, decimals) + "</td>"
               : "<td class=\"number\">n/a</td>";
}

std::string val_metric_of(const fs::path& run_dir) {
  // Looked up level by level: a config.yaml that is not a run's (no train mapping) reads the default.
  const YAML::Node config = read_yaml_file(run_dir / "config.yaml");
  const YAML::Node train = config.IsMap() ? config["train"] : YAML::Node();
  const YAML::Node metric = train && train.IsMap() ? train["val_metric"] : YAML::Node();
  return metric && metric.IsScalar() ? metric.as<std::string>() : "cider_d";
}

std::vector<Row> rows_of_kind(const MetricsTable& table, const std::string& kind) {
  std::vector<Row> rows;
  for (const Row& row : table.rows) {
    const auto it = row.find("kind");
    if (it != row.end() && it->second == kind) rows.push_back(row);
  }
  return rows;
}

std::optional<Row> best_row(const std::vector<Row>& rows, const std::string& metric) {
  std::optional<Row> best;
  for (const Row& row : rows) {
    const auto value = MetricsTable::number(row, metric);
    if (value && (!best || *value > *MetricsTable::number(*best, metric))) best = row;
  }
  return best;
}

std::optional<MetricsTable> read_metrics_if_any(const fs::path& run_dir) {
  const fs::path path = run_dir / "metrics.csv";
  if (!fs::exists(path)) return std::nullopt;
  return read_metrics_csv(path);
}

std::vector<std::pair<std::string, Json>> read_split_scores(const fs::path& run_dir) {
  std::vector<std::pair<std::string, Json>> scores;
  const fs::path results = run_dir / "results";
  if (!fs::is_directory(results)) return scores;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(results)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 12 && name.compare(name.size() - 12, 12, "_scores.json") == 0)
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) scores.emplace_back(file.string(), read_json_file(file));
  return scores;
}

std::optional<double> json_number(const Json& object, const std::string& key) {
  const Json* value = object.find(key);
  if (value == nullptr || value->is_null()) return std::nullopt;
  return value->as_double();
}

ChartSeries series_of(
    const std::vector<Row>& rows, const std::string& x, const std::string& y, std::string name) {
  ChartSeries series{std::move(name), {}};
  for (const Row& row : rows) {
    const auto x_value = MetricsTable::number(row, x);
    const auto y_value = MetricsTable::number(row, y);
    if (x_value && y_value) series.points.emplace_back(*x_value, *y_value);
  }
  return series;
}

}  // namespace saccade::report
