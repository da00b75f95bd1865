// BLEU, ROUGE-L and CIDEr-D following coco-caption's arithmetic step for step (see metrics.h),
// so that results agree with it to floating-point rounding.
#include "eval/metrics.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

namespace saccade {
namespace {

// coco-caption's smoothing constants in BLEU's geometric mean and length ratio.
constexpr double kBleuTiny = 1e-15;
constexpr double kBleuSmall = 1e-9;

void check_references(const std::vector<ImageTokens>& images) {
  for (size_t i = 0; i < images.size(); ++i) {
    if (images[i].references.empty()) {
      throw std::invalid_argument(
          "Image " + std::to_string(i) + " has no reference caption to score against");
    }
  }
}

// BLEU-1..4 from one set of counts (one image, or the sums over the corpus).
std::array<double, kMaxNgram> bleu_from_counts(
    double candidate_length,
    double reference_length,
    const std::array<int, kMaxNgram>& guess,
    const std::array<int, kMaxNgram>& correct) {
  std::array<double, kMaxNgram> scores{};
  double product = 1.0;
  for (int n = 0; n < kMaxNgram; ++n) {
    product *= (correct[n] + kBleuTiny) / (guess[n] + kBleuSmall);
    scores[n] = std::pow(product, 1.0 / (n + 1));
  }
  const double ratio = (candidate_length + kBleuTiny) / (reference_length + kBleuSmall);
  if (ratio < 1.0) {
    for (double& score : scores) score *= std::exp(1.0 - 1.0 / ratio);
  }
  return scores;
}

// The n-grams of a caption as CIDEr-D weights them, with the norm of each order.
struct TfIdf {
  std::array<std::unordered_map<std::string, double>, kMaxNgram> weight;
  std::array<double, kMaxNgram> norm{};
  int bigrams = 0;  // coco-caption's "length" in the gaussian penalty
};

TfIdf tf_idf(const Tokens& tokens, const std::unordered_map<std::string, int>& df, double log_images) {
  TfIdf vector;
  const NgramCounts counts = count_ngrams(tokens);
  for (int n = 0; n < kMaxNgram; ++n) {
    double squares = 0.0;
    for (const auto& [ngram, tf] : counts[n]) {
      const auto it = df.find(ngram);
      const double w = tf * (log_images - std::log(std::max(1.0, it == df.end() ? 0.0 : double(it->second))));
      vector.weight[n][ngram] = w;
      squares += w * w;
      if (n == 1) vector.bigrams += tf;
    }
    vector.norm[n] = std::sqrt(squares);
  }
  return vector;
}

// sim_n of metrics.h, summed into `total` for n = 1..4.
void add_similarity(const TfIdf& candidate, const TfIdf& reference, std::array<double, kMaxNgram>& total) {
  const double delta = candidate.bigrams - reference.bigrams;
  const double penalty = std::exp(-(delta * delta) / (2.0 * kCiderSigma * kCiderSigma));
  for (int n = 0; n < kMaxNgram; ++n) {
    double value = 0.0;
    for (const auto& [ngram, w] : candidate.weight[n]) {
      const auto it = reference.weight[n].find(ngram);
      if (it != reference.weight[n].end()) value += std::min(w, it->second) * it->second;
    }
    if (candidate.norm[n] != 0.0 && reference.norm[n] != 0.0) value /= candidate.norm[n] * reference.norm[n];
    total[n] += value * penalty;
  }
}

// numpy's pairwise_sum for float64: under 8 values added in order; up to 128 over eight
// interleaved partial sums, combined pairwise, then the rest in order; more halved at a multiple
// of 8 and each half summed so.
double pairwise_sum(const double* values, size_t count) {
  if (count < 8) {
    double sum = 0.0;
    for (size_t i = 0; i < count; ++i) sum += values[i];
    return sum;
  }
  if (count <= 128) {
    std::array<double, 8> partial;
    std::copy(values, values + 8, partial.begin());
    size_t i = 8;
    for (; i < count - count % 8; i += 8) {
      for (size_t j = 0; j < 8; ++j) partial[j] += values[i + j];
    }
    double sum = ((partial[0] + partial[1]) + (partial[2] + partial[3])) +
                 ((partial[4] + partial[5]) + (partial[6] + partial[7]));
    for (; i < count; ++i) sum += values[i];
    return sum;
  }
  size_t half = count / 2;
  half -= half % 8;
  return pairwise_sum(values, half) + pairwise_sum(values + half, count - half);
}

}  // namespace

NgramCounts count_ngrams(const Tokens& tokens) {
  NgramCounts counts;
  for (size_t start = 0; start < tokens.size(); ++start) {
    std::string ngram = tokens[start];
    for (int n = 0; n < kMaxNgram && start + n < tokens.size(); ++n) {
      if (n > 0) ngram += ' ' + tokens[start + n];
      ++counts[n][ngram];
    }
  }
  return counts;
}

BleuScores bleu(const std::vector<ImageTokens>& images) {
  check_references(images);
  BleuScores result;
  result.per_image.reserve(images.size());
  for (const auto& image : images) {
    const int length = static_cast<int>(image.candidate.size());
    // Closest reference length; on a tie in distance the shorter one wins.
    int closest = -1;
    NgramCounts max_reference_counts;  // per n-gram, its highest count in any one reference
    for (const auto& reference : image.references) {
      const int reference_length = static_cast<int>(reference.size());
      if (closest < 0 || std::abs(reference_length - length) < std::abs(closest - length) ||
          (std::abs(reference_length - length) == std::abs(closest - length) && reference_length < closest)) {
        closest = reference_length;
      }
      const NgramCounts counts = count_ngrams(reference);
      for (int n = 0; n < kMaxNgram; ++n) {
        for (const auto& [ngram, count] : counts[n]) {
          int& best = max_reference_counts[n][ngram];
          best = std::max(best, count);
        }
      }
    }
    std::array<int, kMaxNgram> guess{};
    std::array<int, kMaxNgram> correct{};
    const NgramCounts counts = count_ngrams(image.candidate);
    for (int n = 0; n < kMaxNgram; ++n) {
      guess[n] = std::max(0, length - n);
      for (const auto& [ngram, count] : counts[n]) {
        const auto it = max_reference_counts[n].find(ngram);
        if (it != max_reference_counts[n].end()) correct[n] += std::min(count, it->second);
      }
      result.guess[n] += guess[n];
      result.correct[n] += correct[n];
    }
    result.candidate_length += length;
    result.reference_length += closest;
    result.per_image.push_back(bleu_from_counts(length, closest, guess, correct));
  }
  result.corpus =
      bleu_from_counts(result.candidate_length, result.reference_length, result.guess, result.correct);
  return result;
}

size_t lcs_length(const Tokens& a, const Tokens& b) {
  // One row of the classic dynamic programme: row[j] = LCS(a[0..i), b[0..j)).
  std::vector<size_t> row(b.size() + 1, 0);
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = 0;  // LCS(a[0..i-1), b[0..j-1))
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = a[i - 1] == b[j - 1] ? diagonal + 1 : std::max(row[j], row[j - 1]);
      diagonal = above;
    }
  }
  return row[b.size()];
}

double rouge_l(const Tokens& candidate, const std::vector<Tokens>& references) {
  if (references.empty()) throw std::invalid_argument("ROUGE-L needs at least one reference caption");
  // coco-caption splits on ' ', which turns "" into one empty token.
  const Tokens empty_caption = {""};
  const Tokens& c = candidate.empty() ? empty_caption : candidate;
  double best_precision = 0.0;
  double best_recall = 0.0;
  for (const auto& reference : references) {
    const Tokens& r = reference.empty() ? empty_caption : reference;
    const double lcs = static_cast<double>(lcs_length(r, c));
    best_precision = std::max(best_precision, lcs / c.size());
    best_recall = std::max(best_recall, lcs / r.size());
  }
  if (best_precision == 0.0 || best_recall == 0.0) return 0.0;
  const double beta2 = kRougeBeta * kRougeBeta;
  return (1.0 + beta2) * best_precision * best_recall / (best_recall + beta2 * best_precision);
}

double numpy_mean(const std::vector<double>& values) {
  return pairwise_sum(values.data(), values.size()) / static_cast<double>(values.size());
}

std::vector<double> cider_d(const std::vector<ImageTokens>& images) {
  check_references(images);
  std::vector<std::vector<Tokens>> corpus;
  corpus.reserve(images.size());
  for (const auto& image : images) corpus.push_back(image.references);
  const CiderD scorer(corpus);
  std::vector<double> scores;
  scores.reserve(images.size());
  for (const auto& image : images)
    scores.push_back(scorer.score({image.candidate}, image.references).front());
  return scores;
}

CiderD::CiderD(const std::vector<std::vector<Tokens>>& corpus)
    : images_(static_cast<int64_t>(corpus.size())) {
  if (corpus.empty())
    throw std::invalid_argument("CIDEr-D needs at least one image's references for its document frequencies");
  // Document frequency: in how many images' reference sets each n-gram occurs.
  for (const auto& references : corpus) {
    std::array<std::unordered_map<std::string, int>, kMaxNgram> seen;
    for (const auto& reference : references) {
      const NgramCounts counts = count_ngrams(reference);
      for (int n = 0; n < kMaxNgram; ++n) seen[n].insert(counts[n].begin(), counts[n].end());
    }
    // Keys of different orders never collide: an n-gram holds n - 1 spaces.
    for (const auto& order : seen) {
      for (const auto& entry : order) ++document_frequency_[entry.first];
    }
  }
}

std::vector<double> CiderD::score(
    const std::vector<Tokens>& candidates, const std::vector<Tokens>& references) const {
  if (references.empty()) throw std::invalid_argument("CIDEr-D needs at least one reference caption");
  const double log_images = std::log(static_cast<double>(images_));
  std::vector<TfIdf> reference_vectors;
  reference_vectors.reserve(references.size());
  for (const auto& reference : references)
    reference_vectors.push_back(tf_idf(reference, document_frequency_, log_images));
  std::vector<double> scores;
  scores.reserve(candidates.size());
  for (const auto& tokens : candidates) {
    const TfIdf candidate = tf_idf(tokens, document_frequency_, log_images);
    std::array<double, kMaxNgram> total{};
    for (const auto& reference : reference_vectors) add_similarity(candidate, reference, total);
    double mean = 0.0;
    for (double value : total) mean += value;
    mean /= kMaxNgram;
    scores.push_back(10.0 * mean / static_cast<double>(references.size()));
  }
  return scores;
}

}  // namespace saccade
