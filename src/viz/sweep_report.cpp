// The sweep page and the comparison of a sweep's runs (see sweep_report.h).
#include "viz/sweep_report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <stdexcept>

#include "base/text.h"
#include "io/json.h"
#include "io/metrics_csv.h"
#include "io/run_folder.h"
#include "io/temporaries.h"
#include "viz/report_parts.h"
#include "viz/svg_chart.h"

namespace saccade {
namespace {

namespace fs = std::filesystem;
using report::best_row;
using report::fixed;
using report::json_number;
using report::naming_file;
using report::number_cell;
using report::read_metrics_if_any;
using report::read_record;
using report::read_split_scores;
using report::Row;
using report::rows_of_kind;
using report::yaml_list;
using report::yaml_string;
using report::yaml_strings;

// A number the comparison shows, and where it is read.
struct ComparedNumber {
  const char* key;      // comparison.csv's column; the key in the scores file
  const char* label;    // the table's header
  const char* section;  // the scores file's object holding it ("" the top level); nullptr: metrics.csv
  int decimals;
};
constexpr ComparedNumber kComparedNumbers[] = {
    {"bleu4", "BLEU-4", "corpus", 3},
    {"cider_d", "CIDEr-D", "corpus", 2},
    {"content_accuracy", "content", "shapes", 3},
    {"object_recall", "recall", "shapes", 3},
    {"relation_accuracy", "relations", "shapes", 3},
    {"relations", "stated", "shapes", 0},
    {"pair_relation_accuracy", "two objects", "shapes", 3},
    {"pair_relation_room_baseline", "first object's room", "shapes", 3},
    {"relation_choice_accuracy", "relation choice", "shapes", 3},
    {"pointing_accuracy", "pointing", "shapes", 3},
    {"pointing_baseline", "random pointing", "shapes", 3},
    {"images_per_s", "train images/s", nullptr, 0},
    {"parameters", "parameters", "", 0},
};

// In a job's folder: the error it failed with, written by the command line, which cannot count on
// the job having written anything else.
const char* const kFailureFile = "failure.txt";

fs::path job_folder(const fs::path& sweep_dir, int number) {
  return sweep_dir / std::to_string(number);
}

// "seed=1", "+seed=1", "++seed=1": an override of the top-level seed.
bool is_seed_override(const std::string& item) {
  const size_t key = item.find_first_not_of("+~");
  const size_t equals = item.find('=');
  return key != std::string::npos && equals != std::string::npos && item.substr(key, equals - key) == "seed";
}

// The median of the training rows' images/s.
std::optional<double> median_training_rate(const fs::path& job_dir) {
  const auto metrics = read_metrics_if_any(job_dir);
  if (!metrics) return std::nullopt;
  std::vector<double> rates;
  for (const Row& row : rows_of_kind(*metrics, "train")) {
    if (const auto rate = MetricsTable::number(row, "images_per_s")) rates.push_back(*rate);
  }
  if (rates.empty()) return std::nullopt;
  std::sort(rates.begin(), rates.end());
  const size_t middle = rates.size() / 2;
  return rates.size() % 2 == 1 ? rates[middle] : (rates[middle - 1] + rates[middle]) / 2;
}

// A finished job's numbers, by key; none when it has no test scores yet.
std::optional<std::map<std::string, double>> numbers_of(const fs::path& job_dir) {
  const fs::path scores_path = job_dir / "results" / "test_scores.json";
  if (!fs::exists(scores_path)) return std::nullopt;
  const Json scores = read_json_file(scores_path);
  std::map<std::string, double> numbers;
  for (const ComparedNumber& number : kComparedNumbers) {
    std::optional<double> value;
    if (number.section == nullptr) {
      value = median_training_rate(job_dir);
    } else if (const Json* holder = *number.section ? scores.find(number.section) : &scores) {
      value = json_number(*holder, number.key);
    }
    if (value) numbers[number.key] = *value;
  }
  return numbers;
}

// The seed a job ran with, as its config.yaml holds it.
std::string seed_of(const fs::path& job_dir) {
  const YAML::Node config = read_yaml_file(job_dir / "config.yaml");
  const YAML::Node seed = config.IsMap() ? config["seed"] : YAML::Node();
  return seed && seed.IsScalar() ? seed.as<std::string>() : "?";
}

// The mean, and the sample standard deviation after " ± " where the values differ.
std::string mean_cell(const std::vector<double>& values, int decimals) {
  if (values.empty()) return "";
  double sum = 0.0;
  for (const double value : values) sum += value;
  const double mean = sum / static_cast<double>(values.size());
  const bool alike = std::all_of(values.begin(), values.end(), [&](double v) { return v == values.front(); });
  if (alike) return fixed(mean, decimals);
  double squares = 0.0;
  for (const double value : values) squares += (value - mean) * (value - mean);
  return fixed(mean, decimals) + " ± " +
         fixed(std::sqrt(squares / static_cast<double>(values.size() - 1)), decimals);
}

// A CSV field, quoted when it holds a separator, a quote or a line break.
std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string csv_text(const SweepComparison& comparison) {
  std::string text;
  const auto line = [&](const std::vector<std::string>& fields) {
    std::vector<std::string> quoted;
    for (const auto& field : fields) quoted.push_back(csv_field(field));
    text += join(quoted, ",") + "\n";
  };
  line(comparison.job_header);
  for (const auto& job : comparison.jobs) line(job);
  return text;
}

const char* const kComparisonLegend =
    "Test split, each job's best checkpoint (results/test_scores.json). Runs are the jobs alike but for "
    "their seed; a cell is the mean over the seeds, ± their sample standard deviation where they differ. "
    "content: share of named objects that are in the image; recall: share of the images' objects named; "
    "relations: share of stated relations that hold, of `stated` per split; two objects: the same in images "
    "of exactly two objects, beside what the first object's position alone would state right there (first "
    "object's room); relation choice: share of true relations the model finds more probable than the "
    "swapped ones (chance 0.5); pointing: share of object "
    "words whose attention peak lies in the object's box, beside a random cell's; train images/s: the median "
    "of the logged training rates.";

std::string unfinished_note(const SweepComparison& comparison) {
  std::vector<std::string> jobs;
  for (const int job : comparison.unfinished) jobs.push_back("#" + std::to_string(job));
  return "Without test scores yet: " + join(jobs, ", ") + ".";
}

// One line per failed job: "Job #1 failed: <error>".
std::vector<std::string> failure_lines(const SweepComparison& comparison) {
  std::vector<std::string> lines;
  for (const auto& job : comparison.failed)
    lines.push_back("Job #" + std::to_string(job.number) + " failed: " + job.error);
  return lines;
}

std::string failures_html(const SweepComparison& comparison) {
  std::string html;
  for (const auto& line : failure_lines(comparison))
    html += "<p class=\"note\">" + xml_escape(line) + "</p>\n";
  return html;
}

std::string comparison_section(const SweepComparison& comparison) {
  std::string html = "<section id=\"comparison\">\n<h2>Comparison</h2>\n";
  if (comparison.rows.empty())
    return html + "<p class=\"note\">No job has test scores yet.</p>\n" + failures_html(comparison) +
           "</section>\n";
  html += "<table>\n<tr>";
  for (const auto& label : comparison.header) html += "<th>" + xml_escape(label) + "</th>";
  html += "</tr>\n";
  for (const auto& row : comparison.rows) {
    html += "<tr><td>" + xml_escape(row[0]) + "</td><td>" + xml_escape(row[1]) + "</td>";
    for (size_t i = 2; i < row.size(); ++i) html += "<td class=\"number\">" + xml_escape(row[i]) + "</td>";
    html += "</tr>\n";
  }
  html += "</table>\n<p class=\"note\">" + xml_escape(kComparisonLegend) + "</p>\n";
  if (!comparison.unfinished.empty())
    html += "<p class=\"note\">" + xml_escape(unfinished_note(comparison)) + "</p>\n";
  return html + failures_html(comparison) + "</section>\n";
}

// The table and its notes (see comparison_markdown), without the failed jobs.
std::string comparison_table_markdown(const SweepComparison& comparison) {
  if (comparison.rows.empty()) return "No job of the sweep has test scores yet.\n";
  const auto line = [](const std::vector<std::string>& cells) {
    std::vector<std::string> escaped;
    for (const auto& cell : cells) {
      std::string text;
      for (const char c : cell) text += c == '|' ? std::string("\\|") : std::string(1, c);
      escaped.push_back(text);
    }
    return "| " + join(escaped, " | ") + " |\n";
  };
  std::vector<std::string> rule = {"---", "---"};
  rule.resize(comparison.header.size(), "---:");
  std::string text = line(comparison.header) + line(rule);
  for (const auto& row : comparison.rows) text += line(row);
  text += "\n" + std::string(kComparisonLegend) + "\n";
  if (!comparison.unfinished.empty()) text += "\n" + unfinished_note(comparison) + "\n";
  return text;
}

SweepComparison compare_jobs(const std::vector<SweepJob>& sweep_jobs) {
  struct Run {
    std::string name;
    std::vector<std::string> seeds;
    std::map<std::string, std::vector<double>> values;
  };
  std::vector<Run> runs;
  std::vector<bool> present(std::size(kComparedNumbers), false);
  SweepComparison comparison;
  for (const SweepJob& job : sweep_jobs) {
    if (!job.failure.empty()) {
      comparison.failed.push_back({job.number, job.failure});
      continue;
    }
    const auto numbers = fs::exists(job.dir / "config.yaml") ? numbers_of(job.dir) : std::nullopt;
    if (!numbers) {
      comparison.unfinished.push_back(job.number);
      continue;
    }
    std::vector<std::string> named;
    for (const auto& item : job.swept) {
      if (!is_seed_override(item)) named.push_back(item);
    }
    const std::string name = named.empty() ? "-" : join(named, " ");
    auto run = std::find_if(runs.begin(), runs.end(), [&](const Run& r) { return r.name == name; });
    if (run == runs.end()) run = runs.insert(runs.end(), Run{name, {}, {}});
    const std::string seed = seed_of(job.dir);
    run->seeds.push_back(seed);
    std::vector<std::string> job_row = {std::to_string(job.number), name, seed};
    for (size_t i = 0; i < std::size(kComparedNumbers); ++i) {
      const auto found = numbers->find(kComparedNumbers[i].key);
      if (found == numbers->end()) {
        job_row.emplace_back();
        continue;
      }
      present[i] = true;
      run->values[found->first].push_back(found->second);
      job_row.push_back(MetricsCsv::number(found->second));
    }
    comparison.jobs.push_back(std::move(job_row));
  }
  comparison.header = {"run", "seeds"};
  comparison.job_header = {"job", "run", "seed"};
  for (size_t i = 0; i < std::size(kComparedNumbers); ++i) {
    comparison.job_header.push_back(kComparedNumbers[i].key);
    if (present[i]) comparison.header.push_back(kComparedNumbers[i].label);
  }
  for (const Run& run : runs) {
    std::vector<std::string> row = {run.name, join(run.seeds, ", ")};
    for (size_t i = 0; i < std::size(kComparedNumbers); ++i) {
      if (!present[i]) continue;
      const auto values = run.values.find(kComparedNumbers[i].key);
      row.push_back(
          values == run.values.end() ? "n/a" : mean_cell(values->second, kComparedNumbers[i].decimals));
    }
    comparison.rows.push_back(std::move(row));
  }
  return comparison;
}

struct JobSummary {
  std::string swept, status, epochs, val_metric;
  std::optional<double> best;
  std::string best_epoch;
  std::optional<double> test_bleu4, test_cider;
  bool has_report = false;
};

// The command line, start time and job count, from multirun.yaml.
std::string summary_section(const fs::path& sweep_dir, size_t job_count) {
  const fs::path record_path = sweep_dir / "multirun.yaml";
  const YAML::Node record = read_record(record_path);
  std::string html = "<section id=\"summary\">\n<dl><dt>command</dt><dd>" +
                     xml_escape(join(yaml_strings(record["argv"], record_path, "argv"), " ")) + "</dd>";
  if (record["started"])
    html +=
        "<dt>started</dt><dd>" + xml_escape(yaml_string(record["started"], record_path, "started")) + "</dd>";
  return html + "<dt>jobs</dt><dd>" + std::to_string(job_count) + "</dd></dl>\n</section>\n";
}

// One row per job, the best one (on `chart_metric`, the first job's validation metric) marked.
std::string jobs_section(const std::vector<JobSummary>& jobs, const std::string& chart_metric) {
  // The best job: the highest best validation score (jobs compared on the first job's metric).
  std::optional<size_t> best_job;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].best && jobs[i].val_metric == chart_metric &&
        (!best_job || *jobs[i].best > *jobs[*best_job].best))
      best_job = i;
  }
  std::string html =
      "<section id=\"jobs\">\n<h2>Jobs</h2>\n<table>\n<tr><th>job</th><th>swept values</th><th>status</th>"
      "<th>epochs</th><th>best validation</th><th>at epoch</th><th>test BLEU-4</th><th>test "
      "CIDEr-D</th></tr>\n";
  for (size_t i = 0; i < jobs.size(); ++i) {
    const JobSummary& job = jobs[i];
    const std::string name = "#" + std::to_string(i);
    html +=
        std::string("<tr") + (best_job == i ? " class=\"best\"" : "") + "><td>" +
        (job.has_report ? "<a href=\"" + std::to_string(i) + "/report.html\">" + name + "</a>" : name) +
        "</td><td>" + xml_escape(job.swept) + "</td><td>" + xml_escape(job.status) +
        "</td><td class=\"number\">" + job.epochs + "</td>" +
        (job.best ? "<td class=\"number\">" + xml_escape(job.val_metric) + " " + fixed(*job.best) + "</td>"
                  : std::string("<td></td>")) +
        "<td class=\"number\">" + job.best_epoch + "</td>" + number_cell(job.test_bleu4) +
        number_cell(job.test_cider) + "</tr>\n";
  }
  html += "</table>\n";
  if (best_job)
    html +=
        "<p>Best job: #" + std::to_string(*best_job) + " (" + xml_escape(jobs[*best_job].swept) + ")</p>\n";
  return html + "</section>\n";
}

}  // namespace

std::vector<SweepJob> read_sweep_jobs(const fs::path& sweep_dir) {
  const fs::path record_path = sweep_dir / "multirun.yaml";
  if (!fs::exists(record_path))
    throw std::runtime_error(sweep_dir.string() + " is not a sweep folder: it has no multirun.yaml");
  std::vector<SweepJob> jobs;
  const YAML::Node listed = yaml_list(read_record(record_path)["jobs"], record_path, "jobs");
  for (size_t i = 0; i < listed.size(); ++i) {
    SweepJob job;
    job.number = static_cast<int>(i);
    job.dir = job_folder(sweep_dir, job.number);
    job.overrides = yaml_strings(listed[i], record_path, "jobs[" + std::to_string(i) + "]");
    if (fs::exists(job.dir / kFailureFile)) job.failure = first_line(read_file_bytes(job.dir / kFailureFile));
    jobs.push_back(std::move(job));
  }
  // An override every job has does not tell jobs apart (with one job, none is shared).
  const auto shared_by_all = [&](const std::string& item) {
    return jobs.size() > 1 && std::all_of(jobs.begin(), jobs.end(), [&](const SweepJob& job) {
             return std::find(job.overrides.begin(), job.overrides.end(), item) != job.overrides.end();
           });
  };
  for (SweepJob& job : jobs) {
    for (const auto& item : job.overrides) {
      if (!shared_by_all(item)) job.swept.push_back(item);
    }
  }
  return jobs;
}

void record_job_failure(const fs::path& sweep_dir, int number, const std::string& error) {
  write_file_atomically(job_folder(sweep_dir, number) / kFailureFile, first_line(error) + "\n");
}

SweepComparison compare_sweep(const fs::path& sweep_dir) {
  return compare_jobs(read_sweep_jobs(sweep_dir));
}

std::string comparison_markdown(const SweepComparison& comparison) {
  std::string text = comparison_table_markdown(comparison);
  for (const auto& line : failure_lines(comparison)) text += "\n" + line + "\n";
  return text;
}

SweepComparison write_sweep_report(const fs::path& sweep_dir) {
  const std::vector<SweepJob> sweep_jobs = read_sweep_jobs(sweep_dir);
  const std::string title = "saccade sweep " + sweep_dir.lexically_normal().string();
  std::string html = report::html_page_start(title) + "<h1>" + xml_escape(title) + "</h1>\n";
  html += summary_section(sweep_dir, sweep_jobs.size());
  std::vector<JobSummary> jobs;
  std::vector<ChartSeries> curves;
  std::string chart_metric;
  for (const SweepJob& sweep_job : sweep_jobs) {
    JobSummary job;
    job.swept = join(sweep_job.swept, " ");
    job.status = "not started";
    const fs::path& job_dir = sweep_job.dir;
    if (fs::exists(job_dir / "config.yaml")) {
      job.status = "started";
      job.val_metric = report::val_metric_of(job_dir);
      if (chart_metric.empty()) chart_metric = job.val_metric;
      job.has_report = fs::exists(job_dir / "report.html");
      if (const auto metrics = read_metrics_if_any(job_dir)) {
        const auto val = rows_of_kind(*metrics, "val");
        if (!val.empty()) job.epochs = val.back().at("epoch");
        if (const auto best = best_row(val, job.val_metric)) {
          job.best = MetricsTable::number(*best, job.val_metric);
          job.best_epoch = best->at("epoch");
        }
        curves.push_back(report::series_of(
            val, "epoch", chart_metric, "#" + std::to_string(sweep_job.number) + " " + job.swept));
      }
      for (const auto& entry : read_split_scores(job_dir)) {
        naming_file(entry.first, [&] {
          const Json& scores = entry.second;
          if (scores.at("split").as_string() != "test") return;
          job.status = "finished";
          job.test_bleu4 = json_number(scores.at("corpus"), "bleu4");
          job.test_cider = json_number(scores.at("corpus"), "cider_d");
        });
      }
    }
    if (!sweep_job.failure.empty()) job.status = "failed: " + sweep_job.failure;
    jobs.push_back(job);
  }
  html += jobs_section(jobs, chart_metric);
  const SweepComparison comparison = compare_jobs(sweep_jobs);
  html += comparison_section(comparison);
  html += "<section id=\"curves\">\n<h2>Curves</h2>\n<div class=\"charts\">\n";
  ChartOptions chart{"Validation " + chart_metric, "epoch", chart_metric};
  chart.width = 900;
  html += svg_line_chart(chart, curves);
  html += "</div>\n</section>\n</body>\n</html>\n";
  write_file_atomically(sweep_dir / "report.html", html);
  write_file_atomically(sweep_dir / "comparison.md", comparison_markdown(comparison));
  write_file_atomically(sweep_dir / "comparison.csv", csv_text(comparison));
  return comparison;
}

}  // namespace saccade
