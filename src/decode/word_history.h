// WordHistory: the words each search row has emitted so far, for the rules that depend on them:
//   decode.block_trigrams  a caption never holds the same three words in a row twice
//   decode.bad_endings     a caption never ends right after one of these words ("a man riding a")
//
//   WordHistory history(rows, options);
//   for (each step) {
//     history.forbid(log_probs);                      // [rows, V]: forbidden words to -inf
//     ... choose words ...
//     history.advance(sources, words);                // row r = row sources[r] + words[r]
//   }
//
// Greedy search and sampling advance every row from itself; beam search from the hypothesis it
// extends. The history lives on the CPU; only the forbidden (row, word) pairs go to the device.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <unordered_set>
#include <vector>

#include "decode/search.h"

namespace saccade {

class WordHistory {
 public:
  WordHistory(int64_t rows, const SearchOptions& options);

  // Whether any rule needs the history; when not, forbid and advance do nothing.
  bool active() const { return block_trigrams_ || !bad_endings_.empty(); }
  // Sets the log-probabilities [rows, V] of the words the rules forbid to -inf.
  void forbid(torch::Tensor& log_probs) const;
  // Row r's history becomes row sources[r]'s followed by words[r]; sources.size() rows remain
  // (fewer when rows leave the search).
  void advance(const std::vector<int64_t>& sources, const std::vector<int64_t>& words);

 private:
  std::vector<std::vector<int64_t>> rows_;
  bool block_trigrams_;
  std::unordered_set<int64_t> bad_endings_;
  int64_t end_id_;
};

}  // namespace saccade
