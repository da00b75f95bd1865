// What the run page and the sweep page both read and draw: a run folder's files (config.yaml,
// metrics.csv, results/<split>_scores.json) and the page's frame and number cells.
//
//   const std::optional<MetricsTable> metrics = report::read_metrics_if_any(run_dir);
//   const auto val = report::rows_of_kind(*metrics, "val");
//   const auto best = report::best_row(val, report::val_metric_of(run_dir));
//
// A malformed input file is a std::invalid_argument naming it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/json.h"
#include "io/metrics_csv.h"
#include "viz/svg_chart.h"

namespace saccade::report {

using Row = std::map<std::string, std::string>;  // a metrics.csv row, column -> text

// A run's or a sweep's record (run.yaml, multirun.yaml) as read_yaml_file reads it: a mapping,
// else a std::invalid_argument naming the file.
YAML::Node read_record(const std::filesystem::path& path);

// `value`, the entry `key` of the YAML file `file`, as a string, a list of strings, a list or a
// mapping. A std::invalid_argument naming the file and key when it is missing or of another shape
// (a file cut short: "<sweep>/multirun.yaml: jobs[1]: expected a list, got null").
std::string yaml_string(const YAML::Node& value, const std::filesystem::path& file, const std::string& key);
std::vector<std::string> yaml_strings(
    const YAML::Node& value, const std::filesystem::path& file, const std::string& key);
YAML::Node yaml_list(const YAML::Node& value, const std::filesystem::path& file, const std::string& key);
YAML::Node yaml_mapping(const YAML::Node& value, const std::filesystem::path& file, const std::string& key);

// `value` with `decimals` digits after the point ("0.8330").
std::string fixed(double value, int decimals = 4);

// <!DOCTYPE html> up to and including <body>, with the pages' inline style.
std::string html_page_start(const std::string& title);

// A right-aligned table cell; "n/a" for a missing value.
std::string number_cell(const std::optional<double>& value, int decimals = 4);

// The validation metric that picks the best checkpoint, from the run's config (train.val_metric).
std::string val_metric_of(const std::filesystem::path& run_dir);

std::vector<Row> rows_of_kind(const MetricsTable& table, const std::string& kind);

// The validation row with the highest `metric` (the first of equals, as the trainer keeps it).
std::optional<Row> best_row(const std::vector<Row>& rows, const std::string& metric);

std::optional<MetricsTable> read_metrics_if_any(const std::filesystem::path& run_dir);

// results/<split>_scores.json files, by path, sorted.
std::vector<std::pair<std::string, Json>> read_split_scores(const std::filesystem::path& run_dir);

// fn(), a std::invalid_argument from it prefixed with `file`: an input file of the wrong shape
// ("expected a number, got a string") is named.
template <class Fn>
auto naming_file(const std::string& file, Fn&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(file + ": " + error.what());
  }
}

// object[key] as a number; std::nullopt when it is absent or null.
std::optional<double> json_number(const Json& object, const std::string& key);

// The (x, y) points of the rows that have both columns.
ChartSeries series_of(
    const std::vector<Row>& rows, const std::string& x, const std::string& y, std::string name);

}  // namespace saccade::report
