// What a training run's metrics.csv holds (io/metrics_csv.h writes it): its columns, and the
// row of a scored split.
//
//   RunLog log(run_dir, metrics_columns(), tensorboard);
//   auto row = score_row(results.scores, results.shapes);
//   row["kind"] = "test";
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval/caption_scores.h"
#include "eval/shapes_metrics.h"

namespace saccade {

// The columns of metrics.csv: kind (train | val | test), epoch, step, the loss terms, the
// learning rate, images/s, the caption scores and the shapes world's metrics.
const std::vector<std::string>& metrics_columns();
// A scores row of metrics.csv: bleu1..4, rouge_l, cider_d, meteor when available, and with
// `shapes` the shapes metrics that have a value (columns named as ValMetric's).
std::map<std::string, std::string> score_row(
    const CaptionScores& scores, const std::optional<ShapesScores>& shapes = std::nullopt);

}  // namespace saccade
