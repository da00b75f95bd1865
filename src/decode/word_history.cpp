// WordHistory: trigram blocking and bad endings over each row's words (see word_history.h).
#include "decode/word_history.h"

#include <torch/torch.h>

#include <limits>

namespace saccade {

WordHistory::WordHistory(int64_t rows, const SearchOptions& options)
    : rows_(static_cast<size_t>(rows)),
      block_trigrams_(options.block_trigrams),
      bad_endings_(options.bad_ending_ids.begin(), options.bad_ending_ids.end()),
      end_id_(options.end_id) {}

void WordHistory::forbid(torch::Tensor& log_probs) const {
  if (!active()) return;
  std::vector<int64_t> rows, words;
  for (size_t r = 0; r < rows_.size(); ++r) {
    const std::vector<int64_t>& history = rows_[r];
    const size_t n = history.size();
    if (n > 0 && bad_endings_.count(history.back()) > 0) {
      rows.push_back(static_cast<int64_t>(r));
      words.push_back(end_id_);
    }
    if (!block_trigrams_ || n < 2) continue;
    // Every word that once followed the last two words would repeat that trigram.
    for (size_t i = 0; i + 2 < n; ++i) {
      if (history[i] == history[n - 2] && history[i + 1] == history[n - 1]) {
        rows.push_back(static_cast<int64_t>(r));
        words.push_back(history[i + 2]);
      }
    }
  }
  if (rows.empty()) return;
  const auto index = [&](const std::vector<int64_t>& values) {
    return torch::tensor(values, torch::kLong).to(log_probs.device());
  };
  log_probs.index_put_(
      {index(rows), index(words)},
      torch::full({}, -std::numeric_limits<float>::infinity(), log_probs.options()));
}

void WordHistory::advance(const std::vector<int64_t>& sources, const std::vector<int64_t>& words) {
  if (!active()) return;
  std::vector<std::vector<int64_t>> next(sources.size());
  for (size_t r = 0; r < sources.size(); ++r) {
    next[r] = rows_[static_cast<size_t>(sources[r])];
    next[r].push_back(words[r]);
  }
  rows_ = std::move(next);
}

}  // namespace saccade
