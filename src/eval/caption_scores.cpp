// score_captions: tokenizes both sides once, then runs every metric over the whole set.
#include "eval/caption_scores.h"

#include <cstddef>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "eval/ptb/tokenizer.h"

namespace saccade {
namespace {

// Each caption's tokens: PTB-normalized the way coco-caption's tokenizer file holds them, in this
// order, or split at whitespace as given.
std::vector<Tokens> tokenize(const std::vector<std::string>& captions, bool normalize) {
  if (normalize) return ptb_tokenize_captions(captions);
  std::vector<Tokens> all;
  for (const std::string& caption : captions) {
    Tokens& tokens = all.emplace_back();
    std::istringstream words(caption);
    for (std::string word; words >> word;) tokens.push_back(word);
  }
  return all;
}

// The images in the order coco-caption tokenizes and averages them: as `file_order` lists them,
// then those it does not list in id order.
std::vector<std::string> scoring_order(
    const std::map<std::string, std::string>& candidates, const std::vector<std::string>& file_order) {
  std::vector<std::string> order;
  std::set<std::string> placed;
  for (const std::string& id : file_order) {
    if (candidates.count(id) > 0 && placed.insert(id).second) order.push_back(id);
  }
  for (const auto& [id, caption] : candidates) {
    if (placed.count(id) == 0) order.push_back(id);
  }
  return order;
}

// Each image's candidate and references, tokenized, in `order`. Each side is tokenized as one
// file, image by image, as coco-caption's tokenizer reads it: some of the lexer's rules look
// past a caption's end, into the next image's.
std::vector<ImageTokens> tokenize_images(
    const std::map<std::string, std::vector<std::string>>& references,
    const std::map<std::string, std::string>& candidates,
    const std::vector<std::string>& order,
    bool normalize) {
  std::vector<std::string> candidate_texts, reference_texts;
  for (const std::string& id : order) {
    const auto it = references.find(id);
    if (it == references.end())
      throw std::invalid_argument("Image '" + id + "' has a candidate but no references");
    candidate_texts.push_back(candidates.at(id));
    reference_texts.insert(reference_texts.end(), it->second.begin(), it->second.end());
  }
  std::vector<Tokens> candidate_tokens = tokenize(candidate_texts, normalize);
  const std::vector<Tokens> reference_tokens = tokenize(reference_texts, normalize);
  std::vector<ImageTokens> images;
  auto next_reference = reference_tokens.begin();
  for (const std::string& id : order) {
    ImageTokens& image = images.emplace_back();
    image.candidate = std::move(candidate_tokens[images.size() - 1]);
    const auto count = static_cast<std::ptrdiff_t>(references.at(id).size());
    image.references.assign(next_reference, next_reference + count);
    next_reference += count;
  }
  return images;
}

// `images` with every token split again at Python whitespace (split_at_python_whitespace).
std::vector<ImageTokens> words_of(const std::vector<ImageTokens>& images) {
  std::vector<ImageTokens> split;
  for (const ImageTokens& image : images) {
    ImageTokens& words = split.emplace_back();
    words.candidate = split_at_python_whitespace(image.candidate);
    for (const Tokens& reference : image.references)
      words.references.push_back(split_at_python_whitespace(reference));
  }
  return split;
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
    const ScoreOptions& options,
    const std::vector<std::string>& file_order) {
  if (candidates.empty()) throw std::invalid_argument("There are no captions to score");
  for (const auto& [id, captions] : references) {
    if (candidates.count(id) == 0)
      throw std::invalid_argument("Image '" + id + "' has references but no candidate");
    if (captions.empty()) throw std::invalid_argument("Image '" + id + "' has no reference caption");
  }
  // coco-caption's scorers read the tokenizer's output two ways: rouge.py and meteor.py split it
  // at ' ' only, BLEU and CIDEr-D at any whitespace, which also cuts a token the tokenizer spaced
  // with U+00A0 ("3 1/2").
  const std::vector<std::string> order = scoring_order(candidates, file_order);
  const std::vector<ImageTokens> spaced = tokenize_images(references, candidates, order, options.normalize);
  const std::vector<ImageTokens> words = options.normalize ? words_of(spaced) : spaced;
  CaptionScores scores;
  std::map<std::string, size_t> place;  // each image's index in scores.images, which go in id order
  for (const auto& [id, caption] : candidates) {
    place[id] = scores.images.size();
    scores.images.emplace_back().image_id = id;
  }
  for (const ImageTokens& image : words) scores.empty_candidates += image.candidate.empty();

  const BleuScores bleu_scores = bleu(words);
  const std::vector<double> cider_scores = cider_d(words);
  const MeteorScores meteor_scores = meteor(spaced, options.meteor);
  scores.bleu = bleu_scores.corpus;
  if (meteor_scores.available) {
    scores.meteor = meteor_scores.corpus;
  } else {
    scores.meteor_unavailable = meteor_scores.unavailable_reason;
  }
  std::vector<double> rouge_scores;
  for (size_t i = 0; i < spaced.size(); ++i) {
    ImageScores& image = scores.images[place.at(order[i])];
    image.bleu = bleu_scores.per_image[i];
    image.rouge_l = rouge_l(spaced[i].candidate, spaced[i].references);
    image.cider_d = cider_scores[i];
    if (meteor_scores.available) image.meteor = meteor_scores.per_image[i];
    rouge_scores.push_back(image.rouge_l);
  }
  // rouge.py and cider_scorer.py average with np.mean, in coco-caption's order.
  scores.rouge_l = numpy_mean(rouge_scores);
  scores.cider_d = numpy_mean(cider_scores);
  return scores;
}

}  // namespace saccade
