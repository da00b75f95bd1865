// Beam search batched over images x beams (see search.h).
#include <ATen/Parallel.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

#include "decode/running_members.h"
#include "decode/search.h"
#include "decode/word_history.h"
#include "kernels/cross_entropy.h"
#include "kernels/vector_lanes.h"

namespace saccade {
namespace {

// A hypothesis that emitted <end> at step `words`: its words are the path of live slot `slot`
// after `words` steps.
struct Finished {
  int64_t words = 0;
  int64_t slot = 0;
  float end_log_prob = 0.0f;  // log p(<end>)
  double score = 0.0;         // normalized, for ranking
};

// What step t chose for each image b and new slot k (index b * K + k): the word, the slot of
// step t - 1 it extends, its log-probability.
struct StepRecord {
  std::vector<int64_t> words;
  std::vector<int64_t> parents;
  std::vector<float> log_probs;
};

double normalized(double log_prob, int64_t length, double penalty) {
  return penalty == 0.0 ? log_prob : log_prob / std::pow(static_cast<double>(length), penalty);
}

// The caption of image b that is live slot `slot` after `words` steps. alphas [S, B, K, (N,) L]
// holds each step's attention, indexed by the slot that made the step.
DecodedCaption backtrack(
    const std::vector<StepRecord>& records,
    const torch::Tensor& alphas,
    int64_t beam,
    int64_t b,
    int64_t words,
    int64_t slot) {
  DecodedCaption caption;
  caption.tokens.resize(words);
  std::vector<float> log_probs(words);
  std::vector<int64_t> slots(words);
  for (int64_t s = words - 1; s >= 0; --s) {
    const int64_t row = b * beam + slot;
    caption.tokens[s] = records[s].words[row];
    log_probs[s] = records[s].log_probs[row];
    slot = records[s].parents[row];
    slots[s] = slot;  // step s's alpha was computed by the slot it extended
  }
  // Summed in step order, as greedy_search does, so beam 1 reproduces its log-prob exactly.
  for (const float log_prob : log_probs) caption.log_prob += log_prob;
  const auto index_options = torch::TensorOptions().dtype(torch::kLong).device(alphas.device());
  const auto step_index = torch::arange(words, index_options);                     // [n]
  const auto slot_index = torch::tensor(slots, torch::kLong).to(alphas.device());  // [n]
  caption.alphas = alphas.select(1, b).index({step_index, slot_index});            // [n, (N,) L]
  return caption;
}

// Step t's choices on the CPU: the chosen extensions (indices into each image's K * V) and their
// words' log-probabilities [B, K] -> one StepRecord.
StepRecord record_step(const torch::Tensor& extensions, const torch::Tensor& log_probs, int64_t vocab) {
  const auto extensions_cpu = extensions.cpu().contiguous(), log_probs_cpu = log_probs.cpu().contiguous();
  const int64_t n = extensions.numel();
  const int64_t* extension = extensions_cpu.data_ptr<int64_t>();
  StepRecord record;
  record.words.resize(n);
  record.parents.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    record.words[i] = extension[i] % vocab;
    record.parents[i] = extension[i] / vocab;
  }
  record.log_probs.assign(log_probs_cpu.data_ptr<float>(), log_probs_cpu.data_ptr<float>() + n);
  return record;
}

// Extensions of step t by <end> become finished hypotheses and free their slot (alive [n, K] is
// set to -inf there); an image with K finished is done and all its slots die, and so is one whose
// every slot is dead with fewer, but some, finished (a vocabulary with fewer than K words to
// take): nothing can extend it. The record's rows and alive's are those of `images`, the n images
// still searched. Returns whether every image is done.
bool finish_ended(
    const StepRecord& record,
    torch::TensorAccessor<float, 2> alive,
    const std::vector<int64_t>& images,
    int64_t t,
    const SearchOptions& options,
    std::vector<std::vector<Finished>>& finished,
    std::vector<char>& done) {
  const int64_t beam = options.beam_size;
  bool all_done = true;
  for (size_t i = 0; i < images.size(); ++i) {
    const int64_t b = images[i];
    for (int64_t k = 0; k < beam && !done[b]; ++k) {
      const int64_t row = static_cast<int64_t>(i) * beam + k;
      if (alive[i][k] == kNegInf || record.words[row] != options.end_id) continue;
      Finished hypothesis{t, record.parents[row], record.log_probs[row]};
      hypothesis.score = normalized(alive[i][k], t + 1, options.length_penalty);
      finished[b].push_back(hypothesis);
      alive[i][k] = kNegInf;
    }
    bool every_slot_dead = true;
    for (int64_t k = 0; k < beam; ++k) every_slot_dead = every_slot_dead && alive[i][k] == kNegInf;
    if (static_cast<int64_t>(finished[b].size()) >= beam || (every_slot_dead && !finished[b].empty()))
      done[b] = 1;
    if (done[b]) {
      for (int64_t k = 0; k < beam; ++k) alive[i][k] = kNegInf;
    }
    all_done = all_done && done[b];
  }
  return all_done;
}

// A step's record over the rows of `images` spread to the whole batch's rows (image b's slot k at
// b K + k), where backtracking reads it; the rows of the other images are never read.
StepRecord spread(const StepRecord& record, const std::vector<int64_t>& images, int64_t batch, int64_t beam) {
  if (static_cast<int64_t>(images.size()) == batch) return record;
  StepRecord whole;
  whole.words.resize(batch * beam);
  whole.parents.resize(batch * beam);
  whole.log_probs.resize(batch * beam);
  for (size_t i = 0; i < images.size(); ++i) {
    for (int64_t k = 0; k < beam; ++k) {
      const int64_t from = static_cast<int64_t>(i) * beam + k, to = images[i] * beam + k;
      whole.words[to] = record.words[from];
      whole.parents[to] = record.parents[from];
      whole.log_probs[to] = record.log_probs[from];
    }
  }
  return whole;
}

// Each image's answers, best first: its finished hypotheses by normalized score, then, when fewer
// than n_best finished, the live ones of max_length words by log-probability (scores [B, K]). The
// first is the image's caption; with n_best > 1 the first n_best are its n-best list.
std::vector<DecodedCaption> best_captions(
    const std::vector<StepRecord>& records,
    const torch::Tensor& alphas,
    const std::vector<std::vector<Finished>>& finished,
    const torch::Tensor& scores,
    const SearchOptions& options) {
  const int64_t beam = options.beam_size;
  const size_t wanted = static_cast<size_t>(options.n_best);
  const auto final_scores = scores.cpu().contiguous();
  const auto live = final_scores.accessor<float, 2>();
  std::vector<DecodedCaption> captions(finished.size());
  for (size_t b = 0; b < finished.size(); ++b) {
    std::vector<const Finished*> by_score;
    for (const Finished& hypothesis : finished[b]) by_score.push_back(&hypothesis);
    // Stable: of equal scores the one found first ranks first.
    std::stable_sort(by_score.begin(), by_score.end(), [](const Finished* x, const Finished* y) {
      return x->score > y->score;
    });
    std::vector<DecodedCaption> ranked;
    for (const Finished* hypothesis : by_score) {
      if (ranked.size() == wanted) break;
      ranked.push_back(backtrack(records, alphas, beam, b, hypothesis->words, hypothesis->slot));
      ranked.back().log_prob += hypothesis->end_log_prob;
      ranked.back().finished = true;
    }
    std::vector<int64_t> slots(beam);
    std::iota(slots.begin(), slots.end(), 0);
    std::stable_sort(
        slots.begin(), slots.end(), [&](int64_t x, int64_t y) { return live[b][x] > live[b][y]; });
    for (const int64_t slot : slots) {
      if (ranked.size() == wanted) break;
      if (!ranked.empty() && live[b][slot] == kNegInf) break;  // never empty-handed, never a dead slot
      DecodedCaption unfinished = backtrack(records, alphas, beam, b, options.max_length, slot);
      const bool listed = std::any_of(ranked.begin(), ranked.end(), [&](const DecodedCaption& caption) {
        return caption.tokens == unfinished.tokens;  // the same words, also finished with <end>
      });
      if (!listed) ranked.push_back(std::move(unfinished));
    }
    captions[b] = ranked.front();
    if (wanted > 1) captions[b].n_best = std::move(ranked);
  }
  return captions;
}

// The K best of one image's K*V extensions, its slots' scores [K] plus their log-probabilities
// rows [K, V], in one pass over the rows without writing the sums: value [K] and at [K] (indices
// into the image's extensions), best first. false when a sum is NaN or two sums tie among the K
// best or at the K-th: topk orders those its own way, and the searches' results keep its order.
// An image whose every slot is dead (done, until it leaves the search) takes -inf at each slot's
// first word, one of the orders topk may give its K*V tied sums; nothing reads those picks.
bool image_top_extensions(
    const float* scores, const float* rows, int64_t beam, int64_t vocab, float* value, int64_t* at) {
  // Blocks of 16 sums as four vectors of the baseline ISA's width (SSE2's four floats).
  constexpr int kLanes = 4;
  constexpr int64_t kBlock = 16;
  using Quad = Lanes<float, kLanes>;
  if (std::all_of(scores, scores + beam, [](float score) { return score == kNegInf; })) {
    for (int64_t k = 0; k < beam; ++k) {
      value[k] = kNegInf;
      at[k] = k * vocab;
    }
    return true;
  }
  bool unordered = false;
  int64_t kept = 0;
  float best_left_out = -std::numeric_limits<float>::infinity();
  bool left_out = false;
  const auto leave_out = [&](float sum) {
    best_left_out = left_out ? std::max(best_left_out, sum) : sum;
    left_out = true;
  };
  // The largest sum of the blocks passed over whole, lane by lane.
  Quad blocks_left_out = Quad{} - std::numeric_limits<float>::infinity();
  for (int64_t k = 0; k < beam; ++k) {
    const float score = scores[k];
    const float* row = rows + k * vocab;
    const auto consider = [&](int64_t v) {
      const float sum = score + row[v];
      if (sum != sum) unordered = true;
      if (kept == beam && !(sum > value[beam - 1])) {
        leave_out(sum);
        return;
      }
      if (kept == beam) leave_out(value[beam - 1]);
      int64_t position = std::min(kept, beam - 1);
      while (position > 0 && value[position - 1] < sum) {
        value[position] = value[position - 1];
        at[position] = at[position - 1];
        --position;
      }
      value[position] = sum;
      at[position] = k * vocab + v;
      kept = std::min(kept + 1, beam);
    };
    int64_t v = 0;
    for (; v + kBlock <= vocab; v += kBlock) {
      // Once K sums are kept, most blocks hold none above the K-th and no NaN: they are left
      // out whole, by vector compares.
      if (kept == beam) {
        Lanes<int32_t, kLanes> passes = {};
        Quad block_max = Quad{} - std::numeric_limits<float>::infinity();
#pragma GCC unroll 4
        for (int64_t q = v; q < v + kBlock; q += kLanes) {
          const Quad sums = load<kLanes>(row + q) + score;
          passes |= (sums > value[beam - 1]) | (sums != sums);
          block_max = sums > block_max ? sums : block_max;
        }
        if (sum_lanes(passes) == 0) {
          blocks_left_out = block_max > blocks_left_out ? block_max : blocks_left_out;
          left_out = true;
          continue;
        }
      }
      for (int64_t i = v; i < v + kBlock; ++i) consider(i);
    }
    for (; v < vocab; ++v) consider(v);
  }
  for (int i = 0; i < kLanes; ++i) best_left_out = std::max(best_left_out, blocks_left_out[i]);
  bool tie = left_out && best_left_out == value[beam - 1];
  for (int64_t i = 0; i + 1 < beam; ++i) tie = tie || value[i] == value[i + 1];
  return !unordered && !tie;
}

// image_top_extensions for every image of scores [B, K] plus log_probs [B*K, V], images over the
// threads: [B, K] scores and indices. false (nothing written) where an image's order is topk's.
bool top_extensions_on_cpu(
    const torch::Tensor& scores, const torch::Tensor& log_probs, torch::Tensor& top, torch::Tensor& index) {
  const int64_t batch = scores.size(0), beam = scores.size(1), vocab = log_probs.size(1);
  const auto slot = scores.contiguous(), words = log_probs.contiguous();
  auto best = torch::empty({batch, beam}, scores.options());
  auto best_index = torch::empty({batch, beam}, scores.options().dtype(torch::kLong));
  std::atomic<bool> unordered{false};
  at::parallel_for(0, batch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      if (!image_top_extensions(
              slot.data_ptr<float>() + b * beam, words.data_ptr<float>() + b * beam * vocab, beam, vocab,
              best.data_ptr<float>() + b * beam, best_index.data_ptr<int64_t>() + b * beam))
        unordered = true;
    }
  });
  if (unordered) return false;
  top = best;
  index = best_index;
  return true;
}

}  // namespace

std::tuple<torch::Tensor, torch::Tensor> best_extensions(
    const torch::Tensor& scores, const torch::Tensor& log_probs, const SearchOptions& options) {
  const int64_t batch = scores.size(0), beam = options.beam_size, vocab = log_probs.size(1);
  const int64_t groups = options.beam_groups;
  torch::Tensor top, index;
  if (groups == 1 && scores.device().is_cpu() && log_probs.scalar_type() == torch::kFloat &&
      scores.scalar_type() == torch::kFloat && top_extensions_on_cpu(scores, log_probs, top, index))
    return {top, index};
  const auto extensions = scores.reshape({batch * beam, 1}) + log_probs;  // [B*K, V]
  if (groups == 1) return extensions.reshape({batch, beam * vocab}).topk(beam, 1);
  const int64_t size = beam / groups;
  const auto per_image = extensions.reshape({batch, beam, vocab});   // [B, K, V]
  auto picked = torch::zeros({batch, vocab}, extensions.options());  // [B, V] earlier groups' picks
  std::vector<torch::Tensor> group_scores, group_indices;
  for (int64_t g = 0; g < groups; ++g) {
    const auto group = per_image.narrow(1, g * size, size).reshape({batch, size * vocab});  // [B, K/G*V]
    const auto penalty = (options.diversity_penalty * picked).repeat({1, size});            // [B, K/G*V]
    auto [augmented, picks] = (group - penalty).topk(size, 1);                              // [B, K/G]
    group_scores.push_back(group.gather(1, picks));
    group_indices.push_back(picks + g * size * vocab);
    // Dead slots (score -inf) pick nothing.
    picked.scatter_add_(1, picks.remainder(vocab), augmented.isfinite().to(picked.scalar_type()));
  }
  return {torch::cat(group_scores, 1), torch::cat(group_indices, 1)};
}

std::vector<DecodedCaption> beam_search(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options) {
  validate(options);
  c10::InferenceMode inference;
  EvalModeGuard eval_mode(decoder);

  const int64_t batch = annotations.size(0), beam = options.beam_size;
  const int64_t vocab = decoder.options().vocab_size;
  const auto long_options = torch::TensorOptions().dtype(torch::kLong).device(annotations.device());
  // Image b's K beams are rows b*K .. b*K+K-1; they start as copies of the image's state.
  DecoderState state = decoder.for_beams(decoder.init_state(annotations), beam);
  auto previous = torch::full({batch * beam}, options.start_id, long_options);  // [B*K]
  // Only the first beam of each group is alive at first, so step 0 does not pick the same word
  // K times.
  auto scores = torch::full({batch, beam}, kNegInf, annotations.options().dtype(torch::kFloat));  // [B, K]
  scores.slice(1, 0, beam, beam / options.beam_groups).fill_(0.0f);

  std::vector<StepRecord> records;         // per step, over the whole batch's rows
  std::vector<torch::Tensor> step_alphas;  // per step [B, K, (N,) L]
  std::vector<std::vector<Finished>> finished(batch);
  std::vector<char> done(batch, 0);
  RunningMembers searched(batch, beam);  // the images whose rows (K each) the state holds
  WordHistory history(batch * beam, options);
  for (int64_t t = 0; t <= options.max_length; ++t) {
    DecoderStep step = decoder.step(state, previous, options.hard_read);
    auto log_probs = log_softmax_rows(step.logits.to(torch::kFloat));        // [n*K, V]
    const auto end_log_probs = log_probs.select(1, options.end_id).clone();  // [n*K]
    forbid_words(log_probs, t, options);
    history.forbid(log_probs);
    keep_an_exit(log_probs, end_log_probs, options);
    auto [top_scores, top_index] = best_extensions(scores, log_probs, options);  // [n, K], [n, K]
    const auto word_log_probs =
        log_probs.reshape({searched.size(), beam * vocab}).gather(1, top_index);  // [n, K]
    auto alpha_sizes = step.alpha.sizes().vec();
    alpha_sizes.insert(alpha_sizes.begin(), searched.size());
    alpha_sizes[1] = beam;
    step_alphas.push_back(searched.in_batch_rows(step.alpha.reshape(alpha_sizes)));  // [B, K, (N,) L]
    const StepRecord record = record_step(top_index, word_log_probs, vocab);
    records.push_back(spread(record, searched.positions(), batch, beam));
    // Row r of the next step extends row sources[r] of this one (image r / K's slot parents[r]).
    std::vector<int64_t> sources(record.parents.size());
    for (size_t row = 0; row < sources.size(); ++row)
      sources[row] = static_cast<int64_t>(row) / beam * beam + record.parents[row];

    auto top_cpu = top_scores.cpu().contiguous();
    const bool all_done =
        finish_ended(record, top_cpu.accessor<float, 2>(), searched.positions(), t, options, finished, done);
    // After step max_length the other extensions are dropped: `scores` keeps the hypotheses of
    // max_length words, the unfinished fallback.
    if (all_done || t == options.max_length) break;
    // Beams move only within their image, whose K rows of attention keys and values are
    // identical: those are not copied.
    state = step.state.reorder_beams(torch::tensor(sources, torch::kLong).to(annotations.device()));  // [n*K]
    const auto next = searched.after_step(done);
    if (!next.kept.empty()) {
      const auto kept = torch::tensor(next.kept, torch::kLong);
      state = state.select_images(kept.to(annotations.device()), beam);
      top_cpu = top_cpu.index_select(0, kept);
    }
    std::vector<int64_t> next_sources, next_words;
    for (const int64_t row : next.rows) {
      next_sources.push_back(sources[row]);
      next_words.push_back(record.words[row]);
    }
    history.advance(next_sources, next_words);
    scores = top_cpu.to(scores.device());
    previous = torch::tensor(next_words, torch::kLong).to(annotations.device());  // [n*K]
  }
  // The images that left were done: each of their slots is dead.
  return best_captions(
      records, torch::stack(step_alphas).to(torch::kCPU, torch::kFloat), finished,
      searched.in_batch_rows(scores, kNegInf), options);  // alphas [S, B, K, (N,) L]
}

}  // namespace saccade
