// `saccade score`: scores any model's captions (a COCO results file) against COCO or Karpathy
// references with the coco-caption metrics and prints them as a table on stdout; with --against
// another results file of the same images, how many captions the two share and both files'
// scores side by side.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "base/text.h"
#include "cli/command.h"
#include "eval/caption_agreement.h"
#include "eval/caption_files.h"
#include "eval/caption_scores.h"
#include "io/log.h"

namespace saccade::cli {
namespace {

// The value of a required file flag; a usage error when it is missing or names no file.
std::filesystem::path input_file(const Invocation& invocation, const std::string& flag) {
  const std::string path = invocation.flag(flag);
  if (path.empty()) throw ConfigError("saccade score needs " + flag + " FILE");
  if (!std::filesystem::is_regular_file(path)) throw ConfigError(flag + ": no file at '" + path + "'");
  return path;
}

std::string format_score(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.6f", value);
  return text;
}

// coco-caption scores exactly the images present on both sides; a mismatch usually means the
// wrong split or file, so it takes `allow_partial` to score the intersection (both maps keep only
// the images in both).
void keep_images_in_both(
    std::map<std::string, std::vector<std::string>>& references,
    std::map<std::string, std::string>& results,
    const std::filesystem::path& references_path,
    const std::filesystem::path& results_path,
    bool allow_partial) {
  std::vector<std::string> without_references;
  std::vector<std::string> without_result;
  for (const auto& entry : results) {
    if (references.count(entry.first) == 0) without_references.push_back(entry.first);
  }
  for (const auto& entry : references) {
    if (results.count(entry.first) == 0) without_result.push_back(entry.first);
  }
  if (!without_references.empty() || !without_result.empty()) {
    const size_t common = results.size() - without_references.size();
    std::string mismatch;
    if (!without_references.empty()) {
      mismatch += results_path.string() + " has " + count_with_examples(without_references) +
                  " image ids with no references in " + references_path.string();
    }
    if (!without_result.empty()) {
      mismatch += std::string(mismatch.empty() ? "" : ", and ") + references_path.string() + " has " +
                  count_with_examples(without_result) + " images with no result";
    }
    if (!allow_partial) {
      throw std::invalid_argument(
          mismatch + "; pass --allow-partial to score the " + std::to_string(common) + " images in both");
    }
    if (common == 0)
      throw std::invalid_argument(mismatch + "; no image is in both, so there is nothing to score");
    log::warn() << mismatch << "; scoring the " << common << " images in both";
    for (const auto& id : without_references) results.erase(id);
    for (const auto& id : without_result) references.erase(id);
  }
}

// One line per metric (METEOR as unavailable, with the reason).
void print_scores(const CaptionScores& scores) {
  const std::vector<std::pair<std::string, std::string>> rows = {
      {"BLEU-1", format_score(scores.bleu[0])},
      {"BLEU-2", format_score(scores.bleu[1])},
      {"BLEU-3", format_score(scores.bleu[2])},
      {"BLEU-4", format_score(scores.bleu[3])},
      {"METEOR",
       scores.meteor ? format_score(*scores.meteor) : "unavailable (" + scores.meteor_unavailable + ")"},
      {"ROUGE-L", format_score(scores.rouge_l)},
      {"CIDEr-D", format_score(scores.cider_d)},
  };
  for (const auto& [metric, value] : rows)
    std::cout << metric << std::string(9 - metric.size(), ' ') << value << "\n";
}

}  // namespace

int run_score(const Job& job) {
  const Invocation& invocation = *job.invocation;
  const auto references_path = input_file(invocation, "--references");
  const auto results_path = input_file(invocation, "--results");
  auto references = read_reference_captions(references_path);
  auto results = read_result_captions(results_path);
  std::filesystem::path against_path;
  std::map<std::string, std::string> against;
  if (invocation.has_flag("--against")) {
    against_path = input_file(invocation, "--against");
    against = read_result_captions(against_path);
  }

  keep_images_in_both(
      references.captions, results, references_path, results_path, invocation.has_flag("--allow-partial"));

  const ScoreOptions options = score_options_from(job.composition.config);
  const CaptionScores scores = score_captions(references.captions, results, options, references.image_order);
  if (scores.empty_candidates > 0) {
    log::warn() << scores.empty_candidates << " of " << results.size()
                << " captions are empty after normalization; they score 0";
  }

  const std::string images = "images   " + std::to_string(scores.images.size()) + "\n";
  if (!against_path.empty()) {
    // The images scored above: with --allow-partial, the other file's captions of those (it must
    // still caption each of them).
    if (invocation.has_flag("--allow-partial")) {
      size_t dropped = 0;
      for (auto it = against.begin(); it != against.end();) {
        const bool scored = results.count(it->first) > 0;
        dropped += !scored;
        it = scored ? std::next(it) : against.erase(it);
      }
      if (dropped > 0)
        log::warn() << against_path.string() << ": " << dropped
                    << " captions of images not scored are left out";
    }
    const auto agreement = compare_captions(
        references.captions, results, scores, against, against_path.string(), options,
        references.image_order);
    std::cout << images << describe(agreement);
    return 0;
  }
  std::cout << images;
  print_scores(scores);
  return 0;
}

}  // namespace saccade::cli
