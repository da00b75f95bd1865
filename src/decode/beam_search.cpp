// Beam search batched over images x beams, and the CaptionSearch strategies.
#include "decode/beam_search.h"

#include <c10/core/InferenceMode.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "config/config.h"

namespace saccade {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

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

}  // namespace

BeamOptions beam_options_from(const Config& config) {
  BeamOptions options;
  options.beam_size = config.get<int64_t>("decode.beam_size");
  options.max_length = config.get<int64_t>("decode.max_length");
  options.min_length = config.get<int64_t>("decode.min_length");
  options.length_penalty = config.get<double>("decode.length_penalty");
  options.block_unk = config.get<bool>("decode.block_unk");
  // Added with hard attention: the decode sections saved with older runs lack it.
  if (config.has("decode.hard_read"))
    options.hard_read = config.get_parsed("decode.hard_read", parse_hard_read);
  return options;
}

void validate(const BeamOptions& options) {
  auto require = [](bool ok, const std::string& message) {
    if (!ok) throw std::invalid_argument(message);
  };
  require(options.beam_size >= 1, "decode.beam_size must be >= 1, got " + std::to_string(options.beam_size));
  require(
      options.max_length >= 1, "decode.max_length must be >= 1, got " + std::to_string(options.max_length));
  require(
      options.min_length >= 0 && options.min_length <= options.max_length,
      "decode.min_length must be in [0, decode.max_length], got " + std::to_string(options.min_length));
  require(
      std::isfinite(options.length_penalty) && options.length_penalty >= 0,
      "decode.length_penalty must be a finite number >= 0");
  require(
      options.start_id >= 0 && options.end_id >= 0 && options.unk_id >= 0 &&
          options.start_id != options.end_id,
      "The <start> and <end> ids must be distinct and >= 0");
  require(
      options.unk_id != options.start_id && options.unk_id != options.end_id,
      "The <unk> id must differ from the <start> and <end> ids");
}

std::vector<DecodedCaption> beam_search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations, const BeamOptions& options) {
  validate(options);
  c10::InferenceMode inference;
  const bool was_training = decoder.is_training();
  decoder.eval();

  const int64_t batch = annotations.size(0), beam = options.beam_size;
  const int64_t vocab = decoder.options().vocab_size;
  const auto long_options = torch::TensorOptions().dtype(torch::kLong).device(annotations.device());
  // Image b's K beams are rows b*K .. b*K+K-1; they start as copies of the image's state.
  const auto image_rows = torch::arange(batch, long_options).repeat_interleave(beam);  // [B*K]
  DecoderState state = decoder.init_state(annotations).index_select(image_rows);
  auto previous = torch::full({batch * beam}, options.start_id, long_options);  // [B*K]
  // Only beam 0 is alive at first, so step 0 does not pick the same word K times.
  auto scores = torch::full({batch, beam}, kNegInf, annotations.options().dtype(torch::kFloat));  // [B, K]
  scores.select(1, 0).fill_(0.0f);
  const auto row_base = (torch::arange(batch, long_options) * beam).unsqueeze(1);  // [B, 1]

  std::vector<StepRecord> records;
  std::vector<torch::Tensor> step_alphas;  // per step [B, K, (N,) L]
  std::vector<std::vector<Finished>> finished(batch);
  std::vector<char> done(batch, 0);
  for (int64_t t = 0; t <= options.max_length; ++t) {
    DecoderStep step = decoder.step(state, previous, options.hard_read);
    auto log_probs = torch::log_softmax(step.logits.to(torch::kFloat), 1);  // [B*K, V]
    if (options.block_unk) log_probs.select(1, options.unk_id).fill_(kNegInf);
    if (t < options.min_length) log_probs.select(1, options.end_id).fill_(kNegInf);
    const auto candidates =
        (scores.reshape({batch * beam, 1}) + log_probs).reshape({batch, beam * vocab});  // [B, K*V]
    auto [top_scores, top_index] = candidates.topk(beam, 1);                             // [B, K], [B, K]
    const auto words = top_index.remainder(vocab);                                       // [B, K]
    const auto parents = top_index.div(vocab, "floor");                                  // [B, K]
    const auto word_log_probs = log_probs.reshape({batch, beam * vocab}).gather(1, top_index);  // [B, K]
    auto alpha_sizes = step.alpha.sizes().vec();
    alpha_sizes.insert(alpha_sizes.begin(), batch);
    alpha_sizes[1] = beam;
    step_alphas.push_back(step.alpha.reshape(alpha_sizes));  // [B, K, (N,) L]

    StepRecord record;
    const auto words_cpu = words.cpu().contiguous(), parents_cpu = parents.cpu().contiguous();
    const auto log_probs_cpu = word_log_probs.cpu().contiguous();
    record.words.assign(words_cpu.data_ptr<int64_t>(), words_cpu.data_ptr<int64_t>() + batch * beam);
    record.parents.assign(parents_cpu.data_ptr<int64_t>(), parents_cpu.data_ptr<int64_t>() + batch * beam);
    record.log_probs.assign(log_probs_cpu.data_ptr<float>(), log_probs_cpu.data_ptr<float>() + batch * beam);
    records.push_back(std::move(record));

    // Extensions by <end> finish (and free their slot); an image with K finished is done.
    auto top_cpu = top_scores.cpu().contiguous();
    auto alive = top_cpu.accessor<float, 2>();
    bool all_done = true;
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t k = 0; k < beam && !done[b]; ++k) {
        const int64_t row = b * beam + k;
        if (alive[b][k] == kNegInf || records.back().words[row] != options.end_id) continue;
        Finished hypothesis{t, records.back().parents[row], records.back().log_probs[row]};
        hypothesis.score = normalized(alive[b][k], t + 1, options.length_penalty);
        finished[b].push_back(hypothesis);
        alive[b][k] = kNegInf;
      }
      if (static_cast<int64_t>(finished[b].size()) >= beam) done[b] = 1;
      if (done[b]) {
        for (int64_t k = 0; k < beam; ++k) alive[b][k] = kNegInf;
      }
      all_done = all_done && done[b];
    }
    // After step max_length the other extensions are dropped: `scores` keeps the hypotheses of
    // max_length words, the unfinished fallback.
    if (all_done || t == options.max_length) break;
    scores = top_cpu.to(scores.device());
    // Beams move only within their image, whose K rows of attention memory are identical: only
    // h and c need reordering, not the [B*K, L, D] keys and values.
    const auto rows = (row_base + parents).reshape({batch * beam});  // [B*K]
    state = DecoderState{
        step.state.h.index_select(0, rows), step.state.c.index_select(0, rows), step.state.memory};
    previous = words.reshape({batch * beam});  // [B*K]
  }
  if (was_training) decoder.train();

  const auto alphas = torch::stack(step_alphas);  // [S, B, K, (N,) L]
  const auto final_scores = scores.cpu().contiguous();
  const auto live = final_scores.accessor<float, 2>();
  std::vector<DecodedCaption> captions(batch);
  for (int64_t b = 0; b < batch; ++b) {
    const Finished* best = nullptr;
    for (const Finished& hypothesis : finished[b]) {
      if (best == nullptr || hypothesis.score > best->score) best = &hypothesis;
    }
    if (best != nullptr) {
      captions[b] = backtrack(records, alphas, beam, b, best->words, best->slot);
      captions[b].log_prob += best->end_log_prob;
      captions[b].finished = true;
      continue;
    }
    // Nothing finished: every live hypothesis has max_length words; take the most probable.
    int64_t slot = 0;
    for (int64_t k = 1; k < beam; ++k) {
      if (live[b][k] > live[b][slot]) slot = k;
    }
    captions[b] = backtrack(records, alphas, beam, b, options.max_length, slot);
  }
  return captions;
}

GreedySearch::GreedySearch(const SearchOptions& options) : options_(options) {
  validate(options_);
}

std::vector<DecodedCaption> GreedySearch::search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations) const {
  return greedy_search(decoder, annotations, options_);
}

BeamSearch::BeamSearch(const BeamOptions& options) : options_(options) {
  validate(options_);
}

std::vector<DecodedCaption> BeamSearch::search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations) const {
  return beam_search(decoder, annotations, options_);
}

SearchOptions greedy_options_of(const BeamOptions& options) {
  SearchOptions greedy;
  greedy.max_length = options.max_length;
  greedy.start_id = options.start_id;
  greedy.end_id = options.end_id;
  greedy.hard_read = options.hard_read;
  return greedy;
}

std::unique_ptr<CaptionSearch> make_caption_search(const BeamOptions& options) {
  validate(options);
  if (options.beam_size == 1 && options.min_length == 0 && !options.block_unk) {
    return std::make_unique<GreedySearch>(greedy_options_of(options));
  }
  return std::make_unique<BeamSearch>(options);
}

}  // namespace saccade
