// score_captions: tokenizes both sides once, then runs every metric over the whole set.
#include "eval/caption_scores.h"

#include <sstream>
#include <stdexcept>

#include "eval/ptb_tokenizer.h"

namespace saccade {
namespace {

Tokens tokenize(const std::string& caption, bool normalize) {
  if (normalize) return ptb_tokenize(caption);
  Tokens tokens;
  std::istringstream words(caption);
  for (std::string word; words >> word;) tokens.push_back(word);
  return tokens;
}

}  // namespace

ScoreOptions score_options_from(const Config& config) {
  ScoreOptions options;
  options.meteor.jar = config.get_optional<std::string>("eval.meteor_jar").value_or("");
  return options;
}

CaptionScores score_captions(
    const std::map<std::string, std::vector<std::string>>& references,
    const std::map<std::string, std::string>& candidates,
    const ScoreOptions& options) {
  if (candidates.empty()) throw std::invalid_argument("There are no captions to score");
  for (const auto& [id, captions] : references) {
    if (candidates.count(id) == 0)
      throw std::invalid_argument("Image '" + id + "' has references but no candidate");
    if (captions.empty()) throw std::invalid_argument("Image '" + id + "' has no reference caption");
  }
  // coco-caption's scorers read the tokenizer's output two ways: rouge.py and meteor.py split it
  // at ' ' only, BLEU and CIDEr-D at any whitespace, which also cuts a token the tokenizer spaced
  // with U+00A0 ("3 1/2").
  CaptionScores scores;
  std::vector<ImageTokens> spaced, words;
  auto split = [&](const Tokens& tokens) {
    return options.normalize ? split_at_python_whitespace(tokens) : tokens;
  };
  for (const auto& [id, caption] : candidates) {
    const auto it = references.find(id);
    if (it == references.end())
      throw std::invalid_argument("Image '" + id + "' has a candidate but no references");
    ImageTokens& image = spaced.emplace_back(ImageTokens{tokenize(caption, options.normalize), {}});
    for (const auto& reference : it->second)
      image.references.push_back(tokenize(reference, options.normalize));
    ImageTokens& image_words = words.emplace_back(ImageTokens{split(image.candidate), {}});
    for (const auto& reference : image.references) image_words.references.push_back(split(reference));
    if (image_words.candidate.empty()) ++scores.empty_candidates;
    scores.images.emplace_back().image_id = id;
  }

  const BleuScores bleu_scores = bleu(words);
  const std::vector<double> cider_scores = cider_d(words);
  const MeteorScores meteor_scores = meteor(spaced, options.meteor);
  scores.bleu = bleu_scores.corpus;
  if (meteor_scores.available) {
    scores.meteor = meteor_scores.corpus;
  } else {
    scores.meteor_unavailable = meteor_scores.unavailable_reason;
  }
  for (size_t i = 0; i < spaced.size(); ++i) {
    ImageScores& image = scores.images[i];
    image.bleu = bleu_scores.per_image[i];
    image.rouge_l = rouge_l(spaced[i].candidate, spaced[i].references);
    image.cider_d = cider_scores[i];
    if (meteor_scores.available) image.meteor = meteor_scores.per_image[i];
    scores.rouge_l += image.rouge_l;
    scores.cider_d += image.cider_d;
  }
  scores.rouge_l /= spaced.size();
  scores.cider_d /= spaced.size();
  return scores;
}

}  // namespace saccade
