// Vocabulary, novelty, distinct-n and mBLEU-4 of a split's captions (see diversity.h).
#include "eval/diversity.h"

#include <iomanip>
#include <set>
#include <sstream>

#include "base/text.h"
#include "eval/metrics.h"

namespace saccade {
namespace {

Tokens split_words(const std::string& caption) {
  Tokens words;
  std::istringstream in(caption);
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

}  // namespace

DiversityScores caption_diversity(
    const std::map<std::string, std::string>& candidates,
    const std::map<std::string, std::vector<ScoredCaption>>& n_best,
    const std::unordered_set<std::string>* training_captions) {
  DiversityScores scores;
  scores.captions = static_cast<int64_t>(candidates.size());
  std::set<std::string> words;
  std::array<std::set<std::string>, 2> distinct;
  std::array<int64_t, 2> total{};  // n-grams of each order; total[0] is the words
  int64_t novel = 0;
  for (const auto& [image, caption] : candidates) {
    const Tokens tokens = split_words(caption);
    words.insert(tokens.begin(), tokens.end());
    const NgramCounts counts = count_ngrams(tokens);
    for (int n = 0; n < 2; ++n) {
      for (const auto& [ngram, count] : counts[n]) {
        distinct[n].insert(ngram);
        total[n] += count;
      }
    }
    if (training_captions && training_captions->count(join(tokens, " ")) == 0) ++novel;
  }
  scores.vocabulary = static_cast<int64_t>(words.size());
  const auto share = [](double part, double whole) { return whole > 0 ? part / whole : 0.0; };
  // Li et al. divide both by the words generated.
  scores.distinct_1 = share(static_cast<double>(distinct[0].size()), static_cast<double>(total[0]));
  scores.distinct_2 = share(static_cast<double>(distinct[1].size()), static_cast<double>(total[0]));
  if (training_captions)
    scores.novel = share(static_cast<double>(novel), static_cast<double>(scores.captions));

  double mbleu_sum = 0.0;
  for (const auto& [image, alternatives] : n_best) {
    if (alternatives.size() < 2) continue;
    std::vector<ImageTokens> each;
    for (size_t i = 0; i < alternatives.size(); ++i) {
      ImageTokens against{split_words(alternatives[i].caption), {}};
      for (size_t j = 0; j < alternatives.size(); ++j) {
        if (j != i) against.references.push_back(split_words(alternatives[j].caption));
      }
      each.push_back(std::move(against));
    }
    double image_sum = 0.0;
    for (const auto& per_image : bleu(each).per_image) image_sum += per_image[3];
    mbleu_sum += image_sum / static_cast<double>(each.size());
    ++scores.n_best_images;
  }
  if (scores.n_best_images > 0) scores.mbleu4 = mbleu_sum / static_cast<double>(scores.n_best_images);
  return scores;
}

std::string describe(const DiversityScores& scores) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(4);
  out << "  vocabulary used    " << scores.vocabulary << " words\n";
  out << "  novel captions     ";
  if (scores.novel) {
    out << *scores.novel << "  (not a training caption)\n";
  } else {
    out << "n/a\n";
  }
  out << "  distinct-1/2       " << scores.distinct_1 << " / " << scores.distinct_2 << "\n";
  if (scores.mbleu4)
    out << "  mBLEU-4 (n-best)   " << *scores.mbleu4 << "  (" << scores.n_best_images << " images)\n";
  return out.str();
}

}  // namespace saccade
