// BLEU-1..4, ROUGE-L and CIDEr-D over tokenized captions, computed as the coco-caption scorer
// (pycocoevalcap: bleu/bleu_scorer.py, rouge/rouge.py, cider/cider_scorer.py) computes them,
// quirks included, so numbers compare with published ones.
//
//   std::vector<ImageTokens> images = {{{"a", "dog"}, {{"a", "dog", "runs"}, {"the", "dog"}}}};
//   BleuScores b = bleu(images);            // b.corpus[3] is BLEU-4
//   std::vector<double> c = cider_d(images);  // one per image; the corpus CIDEr-D is their mean
//   double r = rouge_l(images[0].candidate, images[0].references);
//
// Inputs are token lists, already normalized (ptb_tokenize for coco-caption's numbers); a token
// holds no space, as n-grams are keyed by their tokens joined with spaces. Every
// metric sees the whole evaluated set at once where the official one does: BLEU sums counts
// over images, CIDEr-D takes its document frequencies from the set's references.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace saccade {

using Tokens = std::vector<std::string>;

// One image's candidate caption and its reference captions (at least one).
struct ImageTokens {
  Tokens candidate;
  std::vector<Tokens> references;
};

// Highest n-gram order of BLEU and CIDEr-D.
constexpr int kMaxNgram = 4;

// N-gram counts by order: counts[n - 1] maps "w1 w2 ... wn" (tokens joined by one space) to how
// often that n-gram occurs.
using NgramCounts = std::array<std::unordered_map<std::string, int>, kMaxNgram>;

NgramCounts count_ngrams(const Tokens& tokens);

// --- BLEU (Papineni et al. 2002) as coco-caption computes it ---------------------------------
//
// Per image: candidate length c, effective reference length r = the reference length closest
// to c (ties to the shorter), and for n = 1..4 guess_n = max(0, c - n + 1) and correct_n = the
// candidate's n-gram counts clipped by their maximum count in any one reference. The corpus
// score sums c, r, guess_n and correct_n over images, then
//   BLEU-N = (prod_{n<=N} (correct_n + 1e-15) / (guess_n + 1e-9))^(1/N) * BP,
//   BP = exp(1 - 1/ratio) if ratio = (c + 1e-15) / (r + 1e-9) < 1, else 1.
// The two constants make an order with no match give ~0 instead of a division error.
// Per-image scores use the same formula on one image's counts.
struct BleuScores {
  std::array<double, kMaxNgram> corpus{};                // BLEU-1..4 over the whole set
  std::vector<std::array<double, kMaxNgram>> per_image;  // BLEU-1..4 per image, input order
  // The summed counts behind `corpus` (coco-caption prints them with verbose=1).
  int candidate_length = 0;  // sum of c
  int reference_length = 0;  // sum of the closest reference lengths r
  std::array<int, kMaxNgram> guess{};
  std::array<int, kMaxNgram> correct{};
};

BleuScores bleu(const std::vector<ImageTokens>& images);

// --- ROUGE-L (Lin 2004) with beta = 1.2 -----------------------------------------------------
//
// For each reference: P = LCS / |candidate|, R = LCS / |reference|. With P* and R* the maxima
// over references (taken separately), ROUGE-L = (1 + beta^2) P* R* / (R* + beta^2 P*), 0 when
// either is 0. The corpus score is the mean over images. As in coco-caption, which splits on
// ' ', an empty caption counts as one empty token.
constexpr double kRougeBeta = 1.2;

// Length of the longest common subsequence of two token lists.
size_t lcs_length(const Tokens& a, const Tokens& b);

double rouge_l(const Tokens& candidate, const std::vector<Tokens>& references);

// --- CIDEr-D (Vedantam et al. 2015) ----------------------------------------------------------
//
// With N images in the set, df(g) = the number of images whose references contain n-gram g, and
// a caption's vector of order n holds tf(g) * (log N - log max(1, df(g))) for each of its
// n-grams g. For candidate h and reference s,
//   sim_n = sum_g min(h_g, s_g) s_g / (|h| |s|)            (clipped; 0 when a norm is 0)
//           * exp(-(l_h - l_s)^2 / (2 sigma^2)),  sigma = 6,
// where l is the caption's number of bigrams (coco-caption's quirk; the word count minus 1 for a
// non-empty caption). An image's CIDEr-D = 10 * mean_n (sum_s sim_n) / #references.
constexpr double kCiderSigma = 6.0;

// The mean of `values` as numpy's np.mean computes it (what rouge.py and cider_scorer.py average
// with): numpy's pairwise sum, then one division. The sum can differ from adding in order in the
// last bit.
double numpy_mean(const std::vector<double>& values);

// CIDEr-D of every image, in input order, with document frequencies from these images'
// references; the corpus CIDEr-D is their mean.
std::vector<double> cider_d(const std::vector<ImageTokens>& images);

// CIDEr-D with the document frequencies of a fixed corpus, counted once: what self-critical
// training scores its samples with (df from the training references, N = their images),
// however few images a batch holds.
class CiderD {
 public:
  // `corpus`: each image's reference captions. Throws std::invalid_argument when it is empty.
  explicit CiderD(const std::vector<std::vector<Tokens>>& corpus);
  // CIDEr-D of each candidate against the same references (at least one), in input order.
  std::vector<double> score(
      const std::vector<Tokens>& candidates, const std::vector<Tokens>& references) const;
  int64_t images() const { return images_; }

 private:
  std::unordered_map<std::string, int> document_frequency_;
  int64_t images_ = 0;
};

}  // namespace saccade
