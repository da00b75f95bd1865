// compare_captions and its table (see caption_agreement.h).
#include "eval/caption_agreement.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <set>
#include <stdexcept>

#include "base/text.h"

namespace saccade {
namespace {

// One metric's line: name, both scores and their difference, in columns.
std::string metric_line(const char* metric, std::optional<double> ours, std::optional<double> theirs) {
  char line[128];
  if (ours && theirs) {
    // A difference that rounds to zero prints as +0.000000, never -0.000000.
    const double difference = std::fabs(*ours - *theirs) < 5e-7 ? 0.0 : *ours - *theirs;
    std::snprintf(line, sizeof(line), "%-9s%-12.6f%-12.6f%+.6f\n", metric, *ours, *theirs, difference);
  } else {
    std::snprintf(line, sizeof(line), "%-9sunavailable\n", metric);
  }
  return line;
}

}  // namespace

void check_same_images(
    const std::vector<std::string>& image_ids,
    const std::map<std::string, std::string>& against,
    const std::string& against_name) {
  const std::set<std::string> images(image_ids.begin(), image_ids.end());
  std::vector<std::string> missing, extra;
  for (const auto& id : images) {
    if (against.count(id) == 0) missing.push_back(id);
  }
  for (const auto& [id, caption] : against) {
    if (images.count(id) == 0) extra.push_back(id);
  }
  if (missing.empty() && extra.empty()) return;
  std::string problem =
      against_name + " does not caption the same " + std::to_string(images.size()) + " images: ";
  if (!missing.empty()) problem += count_with_examples(missing) + " have no caption there";
  if (!extra.empty())
    problem +=
        std::string(missing.empty() ? "" : ", and ") + count_with_examples(extra) + " are not compared";
  throw std::invalid_argument(problem);
}

CaptionAgreement compare_captions(
    const std::map<std::string, std::vector<std::string>>& references,
    const std::map<std::string, std::string>& captions,
    const CaptionScores& scores,
    const std::map<std::string, std::string>& against,
    const std::string& against_name,
    const ScoreOptions& options,
    const std::vector<std::string>& file_order) {
  std::vector<std::string> image_ids;
  for (const auto& [id, caption] : captions) image_ids.push_back(id);
  check_same_images(image_ids, against, against_name);
  CaptionAgreement agreement;
  agreement.images = static_cast<int64_t>(captions.size());
  for (const auto& [id, caption] : captions) agreement.identical += caption == against.at(id);
  agreement.scores = scores;
  agreement.against = score_captions(references, against, options, file_order);
  return agreement;
}

std::string describe(const CaptionAgreement& agreement) {
  const CaptionScores &ours = agreement.scores, &theirs = agreement.against;
  char identical[96];
  std::snprintf(
      identical, sizeof(identical), "identical captions  %ld of %ld (%.1f%%)\n", long(agreement.identical),
      long(agreement.images), agreement.images > 0 ? 100.0 * agreement.identical / agreement.images : 0.0);
  std::string text = identical;
  text += "metric   captions    against     difference\n";
  const char* bleu[] = {"BLEU-1", "BLEU-2", "BLEU-3", "BLEU-4"};
  for (int n = 0; n < 4; ++n) text += metric_line(bleu[n], ours.bleu[n], theirs.bleu[n]);
  text += metric_line("METEOR", ours.meteor, theirs.meteor);
  text += metric_line("ROUGE-L", ours.rouge_l, theirs.rouge_l);
  text += metric_line("CIDEr-D", ours.cider_d, theirs.cider_d);
  return text;
}

}  // namespace saccade
