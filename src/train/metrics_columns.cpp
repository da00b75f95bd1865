// metrics_columns and score_row (see metrics_columns.h).
#include "train/metrics_columns.h"

#include "io/metrics_csv.h"
#include "train/train_options.h"

namespace saccade {

const std::vector<std::string>& metrics_columns() {
  static const std::vector<std::string> columns = [] {
    std::vector<std::string> names = {"kind",        "epoch",         "step",         "loss",
                                      "xent",        "alpha_reg",     "reinforce",    "attention_entropy",
                                      "scst_reward", "scst_baseline", "sample_words", "function_word_endings",
                                      "lr",          "images_per_s"};
    for (const ValMetric metric : all_val_metrics()) {
      names.push_back(to_string(metric));
      if (metric == ValMetric::cider_d) names.push_back("meteor");  // scored, but never chosen as val_metric
    }
    return names;
  }();
  return columns;
}

std::map<std::string, std::string> score_row(
    const CaptionScores& scores, const std::optional<ShapesScores>& shapes) {
  std::map<std::string, std::string> row;
  for (const ValMetric metric : all_val_metrics()) {
    if (const auto value = metric_value(scores, shapes, metric))
      row[to_string(metric)] = MetricsCsv::number(*value);
  }
  if (scores.meteor) row["meteor"] = MetricsCsv::number(*scores.meteor);
  return row;
}

}  // namespace saccade
