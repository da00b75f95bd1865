// METEOR through the standard meteor-1.5.jar, run the way coco-caption runs it.
//
//   MeteorScores m = meteor(images, {.jar = "/opt/meteor/meteor-1.5.jar"});
//   if (m.available) use(m.corpus); else log::warn() << "METEOR unavailable: " << m.unavailable_reason;
//
// METEOR (Denkowski & Lavie 2014) needs WordNet synonyms and paraphrase tables, so saccade does
// not reimplement it: it starts `java -Xmx2G -jar <jar> - - -stdio -l en -norm` once, sends one
// "SCORE ||| ref 1 ||| ... ||| ref n ||| candidate" line per image and reads back its statistics
// line, then sends "EVAL ||| stats 1 ||| ... ||| stats N" and reads one score per image and the
// corpus score (pycocoevalcap/meteor/meteor.py). The corpus METEOR is the jar's own aggregate,
// not a mean of the per-image scores.
//
// Without a configured jar, or without Java, METEOR is *unavailable*: callers report it as such,
// never as 0.
#pragma once

#include <string>
#include <vector>

#include "eval/metrics.h"

namespace saccade {

struct MeteorOptions {
  std::string jar;            // path to meteor-1.5.jar (eval.meteor_jar); "" = METEOR unavailable
  std::string java = "java";  // the Java launcher; a name without '/' is looked up on PATH
};

struct MeteorScores {
  bool available = false;
  std::string unavailable_reason;  // when !available: "eval.meteor_jar is not set", ...
  double corpus = 0.0;             // when available: the jar's corpus score
  std::vector<double> per_image;   // when available: one per image, input order
};

// Scores every image's candidate against its references with the jar. Unavailable (no error)
// when options.jar is empty or the Java launcher is not found. Throws std::invalid_argument when
// options.jar names no file, and std::runtime_error when the jar cannot be started or stops
// answering.
MeteorScores meteor(const std::vector<ImageTokens>& images, const MeteorOptions& options);

}  // namespace saccade
