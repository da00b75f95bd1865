// Scoring captions the way the coco-caption scorer does: the one call the trainer's validation,
// `saccade eval` and `saccade score` share.
//
//   CaptionScores s = score_captions(
//       {{"42", {"A dog runs on the grass.", "A brown dog running."}}},   // references, raw text
//       {{"42", "a dog running on grass"}},                               // one candidate per image
//       score_options_from(config));
//   s.bleu[3], s.rouge_l, s.cider_d, s.meteor (std::nullopt when unavailable), s.images[i]...
//
// Captions go in as raw text, references and candidates alike, keyed by image id (any string).
// With `normalize` on (the default), both sides go through ptb_tokenize, as coco-caption's
// PTBTokenizer step does, so the numbers are coco-caption's; with it off, captions are split on
// whitespace as given (for text that is already tokenized exactly as wanted).
// An empty candidate is legitimate and scores 0 on every metric; `empty_candidates` counts them.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "eval/meteor.h"
#include "eval/metrics.h"

namespace saccade {

struct ScoreOptions {
  bool normalize = true;  // PTB-normalize every caption (coco-caption); false: split on whitespace
  MeteorOptions meteor;   // the METEOR jar (eval.meteor_jar); none = METEOR unavailable
};

// Reads eval.meteor_jar (null = METEOR unavailable).
ScoreOptions score_options_from(const Config& config);

struct ImageScores {
  std::string image_id;
  std::array<double, kMaxNgram> bleu{};  // BLEU-1..4 of this image alone
  std::optional<double> meteor;          // std::nullopt when METEOR is unavailable
  double rouge_l = 0.0;
  double cider_d = 0.0;
};

struct CaptionScores {
  std::array<double, kMaxNgram> bleu{};  // corpus BLEU-1..4 (from counts summed over images)
  std::optional<double> meteor;          // the jar's corpus METEOR; std::nullopt when unavailable
  std::string meteor_unavailable;        // why METEOR is std::nullopt ("eval.meteor_jar is not set")
  double rouge_l = 0.0;                  // mean ROUGE-L over images
  double cider_d = 0.0;                  // mean CIDEr-D over images
  std::vector<ImageScores> images;       // per image, in image-id order
  size_t empty_candidates = 0;           // candidates with no token left after normalization
};

// Scores `candidates` against `references`. Both must hold the same image ids, at least one,
// and every image at least one reference: otherwise std::invalid_argument naming an offending
// id. METEOR errors propagate as meteor() throws them.
// `file_order` is the order the references' file lists its images in (a COCO captions file's
// "images"): coco-caption tokenizes each side as one file in that order, and a few of the
// lexer's rules look past a caption's end into the next image's ("letter B." before "A ..."),
// and it averages ROUGE-L and CIDEr-D in that order. Images it does not list follow in id order.
CaptionScores score_captions(
    const std::map<std::string, std::vector<std::string>>& references,
    const std::map<std::string, std::string>& candidates,
    const ScoreOptions& options,
    const std::vector<std::string>& file_order = {});

}  // namespace saccade
