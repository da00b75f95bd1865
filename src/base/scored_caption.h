// One of an image's n best captions with its log-probability: what decoding finds and the
// results files keep.
#pragma once

#include <string>

namespace saccade {

struct ScoredCaption {
  std::string caption;    // words joined by one space
  double log_prob = 0.0;  // under the model
};

}  // namespace saccade
