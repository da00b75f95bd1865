// The run report page: read a run folder's files, write one HTML page.
#include "viz/run_report.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "base/text.h"
#include "data/vocabulary.h"
#include "eval/shapes_metrics.h"
#include "io/json.h"
#include "io/metrics_csv.h"
#include "io/run_folder.h"
#include "viz/report_parts.h"
#include "viz/sample_overlays.h"
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
using report::series_of;
using report::val_metric_of;
using report::yaml_mapping;
using report::yaml_string;
using report::yaml_strings;

struct CaptionMetric {
  const char* key;    // the metrics.csv column and the scores-file key
  const char* label;  // as the table shows it
};
constexpr CaptionMetric kCaptionMetrics[] = {
    {"bleu1", "BLEU-1"},  {"bleu2", "BLEU-2"},    {"bleu3", "BLEU-3"},   {"bleu4", "BLEU-4"},
    {"meteor", "METEOR"}, {"rouge_l", "ROUGE-L"}, {"cider_d", "CIDEr-D"}};

std::string metrics_header() {
  std::string html = "<tr><th>scores</th><th>checkpoint epoch</th><th>search</th><th>images</th>";
  for (const auto& metric : kCaptionMetrics) html += std::string("<th>") + metric.label + "</th>";
  return html + "</tr>\n";
}

std::string metrics_row_from_csv(const std::string& label, const Row& row) {
  std::string html = "<tr><td>" + xml_escape(label) + "</td><td class=\"number\">" + row.at("epoch") +
                     "</td><td>greedy</td><td class=\"number\"></td>";
  for (const auto& metric : kCaptionMetrics) html += number_cell(MetricsTable::number(row, metric.key));
  return html + "</tr>\n";
}

std::string metrics_row_from_scores(const Json& scores) {
  const Json& corpus = scores.at("corpus");
  std::string html = "<tr><td>" + xml_escape(scores.at("split").as_string()) + "</td><td class=\"number\">" +
                     std::to_string(scores.at("checkpoint_epoch").as_int64()) + "</td><td>" +
                     xml_escape(scores.at("search").as_string()) + "</td><td class=\"number\">" +
                     std::to_string(scores.at("images").as_int64()) + "</td>";
  for (const auto& metric : kCaptionMetrics) html += number_cell(json_number(corpus, metric.key));
  return html + "</tr>\n";
}

std::string summary_section(const fs::path& run_dir, const std::optional<MetricsTable>& metrics) {
  std::string html = "<section id=\"summary\">\n<dl>\n";
  const auto item = [&](const std::string& name, const std::string& value) {
    html += "<dt>" + xml_escape(name) + "</dt><dd>" + xml_escape(value) + "</dd>\n";
  };
  const fs::path record = run_dir / "run.yaml";
  if (fs::exists(record)) {
    const YAML::Node run = read_record(record);
    item("command", join_words(yaml_strings(run["argv"], record, "argv")));
    std::vector<std::string> choices;
    if (const YAML::Node chosen = run["choices"]) {
      for (const auto& choice : yaml_mapping(chosen, record, "choices")) {
        const std::string group = yaml_string(choice.first, record, "choices");
        const YAML::Node& option = choice.second;
        choices.push_back(
            group + "=" + (option.IsNull() ? "null" : yaml_string(option, record, "choices." + group)));
      }
    }
    item("config choices", join(choices, ", "));
    for (const char* key : {"started", "host"})
      if (run[key]) item(key, yaml_string(run[key], record, key));
    if (run["version"] && run["commit"])
      item(
          "saccade", yaml_string(run["version"], record, "version") + " (" +
                         yaml_string(run["commit"], record, "commit") + ")");
  }
  if (metrics) {
    const auto train = rows_of_kind(*metrics, "train");
    const auto val = rows_of_kind(*metrics, "val");
    if (!val.empty()) item("epochs validated", val.back().at("epoch"));
    if (!train.empty()) {
      item("training steps", train.back().at("step"));
      if (const auto rate = MetricsTable::number(train.back(), "images_per_s"))
        item("training speed (last)", fixed(*rate, 1) + " images/s");
    }
  }
  return html + "</dl>\n</section>\n";
}

std::string metrics_section(
    const std::optional<MetricsTable>& metrics,
    const std::string& val_metric,
    const std::vector<std::pair<std::string, Json>>& split_scores) {
  std::string html = "<section id=\"metrics\">\n<h2>Metrics</h2>\n";
  const std::vector<Row> val = metrics ? rows_of_kind(*metrics, "val") : std::vector<Row>{};
  if (val.empty() && split_scores.empty())
    return html + "<p class=\"note\">No validation yet.</p>\n</section>\n";
  html += "<table>\n" + metrics_header();
  if (const auto best = best_row(val, val_metric))
    html += metrics_row_from_csv("validation, best " + val_metric, *best);
  if (!val.empty()) html += metrics_row_from_csv("validation, last epoch", val.back());
  for (const auto& entry : split_scores)
    html += naming_file(entry.first, [&] { return metrics_row_from_scores(entry.second); });
  html += "</table>\n";
  html +=
      "<p class=\"note\">Validation rows: greedy decoding during training (up to train.val_max_images "
      "images). Split rows: results/&lt;split&gt;_scores.json, scored with the coco-caption metrics.</p>\n";
  return html + "</section>\n";
}

// A count of a shapes score; "-" for scores written before that metric existed.
std::string count_cell(const Json& shapes, const char* key) {
  const Json* count = shapes.find(key);
  return "<td class=\"number\">" + (count == nullptr ? std::string("-") : std::to_string(count->as_int64())) +
         "</td>";
}

// The pointing game by kind of word, "colour / shape / size"; "-" for a kind without words or for
// scores written before the split existed.
std::string pointing_by_word_cell(const Json& shapes) {
  std::string text;
  for (size_t kind = 0; kind < kPointingWordKinds; ++kind) {
    const auto accuracy = json_number(
        shapes, std::string("pointing_") + to_string(static_cast<PointingWordKind>(kind)) + "_accuracy");
    text += (kind ? " / " : "") + (accuracy ? fixed(*accuracy, 3) : std::string("-"));
  }
  return "<td class=\"number\">" + text + "</td>";
}

// The shapes table's row of one split's scores; "" when it has no shapes metrics.
std::string shapes_row(const Json& scores) {
  const Json* shapes = scores.find("shapes");
  if (shapes == nullptr) return "";
  std::string row =
      "<tr><td>" + xml_escape(scores.at("split").as_string() + " (" + scores.at("search").as_string() + ")") +
      "</td>" + number_cell(json_number(*shapes, "pointing_accuracy"), 3) +
      number_cell(json_number(*shapes, "pointing_baseline"), 3) + count_cell(*shapes, "pointing_words") +
      pointing_by_word_cell(*shapes);
  for (const auto& [ratio, count] :
       {std::pair{"content_accuracy", "object_mentions"}, std::pair{"object_recall", "objects"},
        std::pair{"relation_accuracy", "relations"}, std::pair{"pair_relation_accuracy", "pair_relations"}}) {
    row += number_cell(json_number(*shapes, ratio), 3) + count_cell(*shapes, count);
  }
  return row + number_cell(json_number(*shapes, "pair_relation_room_baseline"), 3) +
         number_cell(json_number(*shapes, "relation_choice_accuracy"), 3) +
         count_cell(*shapes, "relation_choices") + "</tr>\n";
}

std::string shapes_section(const std::vector<std::pair<std::string, Json>>& split_scores) {
  std::string rows;
  for (const auto& entry : split_scores)
    rows += naming_file(entry.first, [&] { return shapes_row(entry.second); });
  if (rows.empty()) return "";
  return "<section id=\"shapes\">\n<h2>Attention and content (shapes world)</h2>\n<table>\n"
         "<tr><th>split</th><th>pointing game</th><th>random attention</th><th>words</th><th>by word: "
         "colour / shape / size</th>"
         "<th>content accuracy</th><th>object mentions</th><th>object "
         "recall</th><th>objects</th><th>relation "
         "accuracy</th><th>relations</th><th>two objects</th><th>relations</th><th>first object's "
         "room</th><th>relation choice</th><th>pairs</th></tr>\n" +
         rows +
         "</table>\n<p class=\"note\">Pointing game: share of generated object words whose attention peak "
         "lies in that object's box, and the same for each kind of word. Object recall: share of the images' "
         "objects a caption names with "
         "their colour and shape. Two objects: relation accuracy in images of exactly two objects, beside "
         "what the first object's position alone would state right there (the relation toward its side "
         "with the most room). Relation choice: share of true relations the model finds more probable "
         "than the same caption with the two objects swapped (chance 0.5).</p>\n</section>\n";
}

// The diversity table's row of one split's scores; "" when it has no diversity metrics.
std::string diversity_row(const Json& scores) {
  const Json* diversity = scores.find("diversity");
  if (diversity == nullptr) return "";
  return "<tr><td>" +
         xml_escape(scores.at("split").as_string() + " (" + scores.at("search").as_string() + ")") +
         "</td><td class=\"number\">" + std::to_string(diversity->at("vocabulary").as_int64()) + "</td>" +
         number_cell(json_number(*diversity, "novel"), 3) +
         number_cell(json_number(*diversity, "distinct_1"), 3) +
         number_cell(json_number(*diversity, "distinct_2"), 3) +
         number_cell(json_number(*diversity, "mbleu4"), 3) + "</tr>\n";
}

std::string diversity_section(const std::vector<std::pair<std::string, Json>>& split_scores) {
  std::string rows;
  for (const auto& entry : split_scores)
    rows += naming_file(entry.first, [&] { return diversity_row(entry.second); });
  if (rows.empty()) return "";
  return "<section id=\"diversity\">\n<h2>Diversity</h2>\n<table>\n"
         "<tr><th>split</th><th>vocabulary used</th><th>novel captions</th><th>distinct-1</th>"
         "<th>distinct-2</th><th>mBLEU-4 among n-best</th></tr>\n" +
         rows +
         "</table>\n<p class=\"note\">Novel: share of captions that are not a training caption. Distinct-n: "
         "distinct n-grams of the split's captions over their words. mBLEU-4: BLEU-4 of each of an image's "
         "n best captions against the others (decode.n_best &gt; 1; lower is more "
         "diverse).</p>\n</section>\n";
}

std::string curves_section(const std::optional<MetricsTable>& metrics) {
  std::string html = "<section id=\"curves\">\n<h2>Curves</h2>\n<div class=\"charts\">\n";
  const std::vector<Row> train = metrics ? rows_of_kind(*metrics, "train") : std::vector<Row>{};
  const std::vector<Row> val = metrics ? rows_of_kind(*metrics, "val") : std::vector<Row>{};
  html += svg_line_chart(
      {"Training loss", "step", "loss"},
      {series_of(train, "step", "loss", "loss"), series_of(train, "step", "xent", "cross-entropy"),
       series_of(train, "step", "alpha_reg", "attention penalty")});
  const auto reinforce = series_of(train, "step", "reinforce", "REINFORCE term");
  if (!reinforce.points.empty()) {  // a hard-attention run
    html += svg_line_chart(
        {"Hard attention", "step", "value"},
        {reinforce, series_of(train, "step", "attention_entropy", "attention entropy")});
  }
  const auto reward = series_of(train, "step", "scst_reward", "mean reward (CIDEr-D)");
  if (!reward.points.empty()) {  // a self-critical run
    html += svg_line_chart(
        {"Self-critical training", "step", "CIDEr-D"},
        {reward, series_of(train, "step", "scst_baseline", "mean baseline")});
    html += svg_line_chart(
        {"Sampled captions: length", "step", "words"},
        {series_of(train, "step", "sample_words", "mean words")});
    html += svg_line_chart(
        {"Sampled captions: function-word endings", "step", "share"},
        {series_of(train, "step", "function_word_endings", "share ending in a function word")});
  }
  std::vector<ChartSeries> captions;
  for (const auto& metric : kCaptionMetrics) {
    if (std::string(metric.key) != "cider_d")
      captions.push_back(series_of(val, "epoch", metric.key, metric.label));
  }
  html += svg_line_chart({"Validation", "epoch", "score"}, captions);
  html += svg_line_chart(
      {"Validation CIDEr-D", "epoch", "CIDEr-D"}, {series_of(val, "epoch", "cider_d", "CIDEr-D")});
  std::vector<ChartSeries> shapes;  // a shapes-world run: what the captions say, where words look
  for (const auto& [key, label] :
       {std::pair<const char*, const char*>{"pointing_accuracy", "pointing game"},
        {"content_accuracy", "content accuracy"},
        {"object_recall", "object recall"},
        {"relation_accuracy", "relation accuracy"},
        {"relation_choice_accuracy", "relation choice"}}) {
    auto series = series_of(val, "epoch", key, label);
    if (!series.points.empty()) shapes.push_back(std::move(series));
  }
  if (!shapes.empty()) html += svg_line_chart({"Validation: shapes world", "epoch", "share"}, shapes);
  html += svg_line_chart({"Learning rate", "step", "lr"}, {series_of(train, "step", "lr", "learning rate")});
  return html + "</div>\n</section>\n";
}

// The figures of samples.json's samples: overlay, caption and references.
std::string sample_figures(const Json& index, const fs::path& run_dir) {
  std::string html;
  for (const Json& sample : index.as_array()) {
    const std::string id = sample.at("image_id").as_string();
    const fs::path png = run_dir / "samples" / sample.at("file").as_string();
    html += "<figure class=\"sample\">\n";
    if (fs::exists(png)) {
      html += "<img alt=\"attention overlay of image " + xml_escape(id) + "\" src=\"data:image/png;base64," +
              base64_encode(read_file_bytes(png)) + "\">\n";
    } else {
      html += "<p class=\"note\">" + xml_escape(png.string()) + " is missing.</p>\n";
    }
    html += "<figcaption><p>image " + xml_escape(id) + ", log-probability " +
            fixed(sample.at("log_prob").as_double(), 2) +
            "</p><p class=\"generated\">generated: " + xml_escape(sample.at("caption").as_string()) +
            "</p><ul class=\"references\">";
    for (const Json& reference : sample.at("references").as_array())
      html += "<li>reference: " + xml_escape(reference.as_string()) + "</li>";
    html += "</ul></figcaption>\n</figure>\n";
  }
  return html;
}

std::string samples_section(const fs::path& run_dir) {
  const fs::path index_path = run_dir / "samples" / kSamplesIndex;
  std::string html = "<section id=\"samples\">\n<h2>Samples</h2>\n";
  if (!fs::exists(index_path)) {
    return html +
           "<p class=\"note\">No samples yet: they are drawn from the test split at the end of training "
           "(viz.sample_images).</p>\n</section>\n";
  }
  const Json index = read_json_file(index_path);
  return html + naming_file(index_path.string(), [&] { return sample_figures(index, run_dir); }) +
         "</section>\n";
}

std::string config_section(const fs::path& run_dir) {
  std::string html = "<section id=\"config\">\n<h2>Config</h2>\n";
  if (fs::exists(run_dir / "overrides.yaml")) {
    html += "<details open><summary>overrides.yaml</summary><pre>" +
            xml_escape(read_file_bytes(run_dir / "overrides.yaml")) + "</pre></details>\n";
  }
  html += "<details><summary>config.yaml (resolved)</summary><pre>" +
          xml_escape(read_file_bytes(run_dir / "config.yaml")) + "</pre></details>\n";
  return html + "</section>\n";
}

}  // namespace

void write_run_report(const fs::path& run_dir) {
  if (!fs::exists(run_dir / "config.yaml"))
    throw std::runtime_error(run_dir.string() + " is not a run folder: it has no config.yaml");
  const std::optional<MetricsTable> metrics = read_metrics_if_any(run_dir);
  const auto split_scores = read_split_scores(run_dir);
  const std::string title = "saccade run " + run_dir.lexically_normal().string();
  std::string html = report::html_page_start(title) + "<h1>" + xml_escape(title) + "</h1>\n";
  html += summary_section(run_dir, metrics);
  html += metrics_section(metrics, val_metric_of(run_dir), split_scores);
  html += shapes_section(split_scores);
  html += diversity_section(split_scores);
  html += curves_section(metrics);
  html += samples_section(run_dir);
  html += config_section(run_dir);
  html += "</body>\n</html>\n";
  write_file_atomically(run_dir / "report.html", html);
}

}  // namespace saccade
