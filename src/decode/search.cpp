// Search options, greedy search batched over images, and the choice between greedy and beam.
#include "decode/search.h"

#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "base/enum_names.h"
#include "config/config.h"
#include "decode/running_members.h"
#include "decode/word_history.h"
#include "kernels/cross_entropy.h"

namespace saccade {

namespace {

const EnumNames<SearchMethod> kSearchMethodNames(
    "decode method",
    {{SearchMethod::greedy, "greedy"}, {SearchMethod::beam, "beam"}, {SearchMethod::sample, "sample"}});

// Below this, log-probabilities divided by the temperature overflow float.
constexpr double kMinTemperature = 1e-4;
static_assert(
    kStuckEndFloor / kMinTemperature > -std::numeric_limits<float>::max(),
    "a stuck row's <end> stays finite at the smallest temperature");

// Picks every row's word from the log-probabilities of the words allowed [B, V] (the others -inf).
using WordChoice = std::function<torch::Tensor(const torch::Tensor& log_probs)>;

// Each batch row's caption from the words, log-probabilities and alphas of every step (per step
// [B], [B], [B, (N,) L]): up to its first <end> or max_length words.
std::vector<DecodedCaption> captions_of_steps(
    const std::vector<torch::Tensor>& words,
    const std::vector<torch::Tensor>& log_probs,
    const std::vector<torch::Tensor>& alphas,
    const SearchOptions& options) {
  // The results go to the host once.
  const auto word_matrix = torch::stack(words, 1).cpu();                             // [B, S]
  const auto log_prob_matrix = torch::stack(log_probs, 1).cpu();                     // [B, S]
  const auto alpha_matrix = torch::stack(alphas, 1).to(torch::kCPU, torch::kFloat);  // [B, S, (N,) L]
  const auto word_access = word_matrix.accessor<int64_t, 2>();
  const auto log_prob_access = log_prob_matrix.accessor<float, 2>();
  const int64_t batch = word_matrix.size(0), steps = word_matrix.size(1);

  std::vector<DecodedCaption> captions(batch);
  for (int64_t b = 0; b < batch; ++b) {
    DecodedCaption& caption = captions[b];
    int64_t emitted = 0;
    for (int64_t t = 0; t < steps; ++t) {
      const bool is_end = word_access[b][t] == options.end_id;
      if (!is_end && emitted == options.max_length) break;
      caption.log_prob += log_prob_access[b][t];
      if (is_end) {
        caption.finished = true;
        break;
      }
      caption.tokens.push_back(word_access[b][t]);
      ++emitted;
    }
    caption.alphas = alpha_matrix[b].slice(0, 0, emitted).clone();  // [n, L]
  }
  return captions;
}

// Greedy and sampled search share everything but the choice of each word: one decoder step per
// word for the rows still running, until every row has emitted <end> or max_length words.
std::vector<DecodedCaption> word_by_word(
    CaptionDecoderImpl& decoder,
    const torch::Tensor& annotations,
    const SearchOptions& options,
    const WordChoice& choose) {
  c10::InferenceMode inference;
  EvalModeGuard eval_mode(decoder);

  const int64_t batch = annotations.size(0);
  DecoderState state = decoder.init_state(annotations);
  const auto on_device = torch::TensorOptions().device(annotations.device());
  auto previous = torch::full({batch}, options.start_id, on_device.dtype(torch::kLong));  // [n]
  WordHistory history(batch, options);
  RunningMembers running(batch, 1);                        // the batch rows the state's n rows decode
  std::vector<char> ended(static_cast<size_t>(batch), 0);  // per batch row: <end> emitted
  std::vector<torch::Tensor> words, log_probs, alphas;     // per step: [B], [B], [B, (N,) L]
  // One step more than max_length words leaves room for the <end> after the last word.
  for (int64_t t = 0; t <= options.max_length; ++t) {
    DecoderStep step = decoder.step(state, previous, options.hard_read);
    // The words not allowed become -inf in place; only <end>'s column is kept aside, for a row
    // with every word forbidden, rather than a copy of every row.
    auto scores = log_softmax_rows(step.logits.to(torch::kFloat));     // [n, V]
    const auto end_scores = scores.select(1, options.end_id).clone();  // [n]
    forbid_words(scores, t, options);
    history.forbid(scores);
    keep_an_exit(scores, end_scores, options);
    const auto word = choose(scores);  // [n]
    // Rows that left the search read as having emitted <end> (their captions ended before).
    words.push_back(running.in_batch_rows(word, static_cast<double>(options.end_id)));
    log_probs.push_back(running.in_batch_rows(scores.gather(1, word.unsqueeze(1)).squeeze(1)));
    alphas.push_back(running.in_batch_rows(step.alpha));
    const auto chosen = word.cpu().contiguous();
    const int64_t* chosen_words = chosen.data_ptr<int64_t>();
    for (int64_t r = 0; r < running.size(); ++r)
      ended[running.positions()[r]] |= chosen_words[r] == options.end_id;
    if (std::all_of(ended.begin(), ended.end(), [](char row_ended) { return row_ended != 0; })) break;
    const auto next = running.after_step(ended);
    std::vector<int64_t> next_words;
    for (const int64_t r : next.rows) next_words.push_back(chosen_words[r]);
    history.advance(next.rows, next_words);
    if (next.kept.empty()) {
      state = std::move(step.state);
      previous = word;
    } else {
      const auto kept = torch::tensor(next.kept, torch::kLong).to(annotations.device());
      state = step.state.index_select(kept);
      previous = word.index_select(0, kept);
    }
  }
  return captions_of_steps(words, log_probs, alphas, options);
}

// Step t's words drawn from the allowed words' distribution as `options` reshapes it (search.h).
torch::Tensor sampled_words(const torch::Tensor& log_probs, const SearchOptions& options) {
  auto logits = log_probs / options.temperature;  // [B, V]
  const int64_t vocab = logits.size(1);
  if (options.top_k > 0 && options.top_k < vocab) {
    const auto kth = std::get<0>(logits.topk(options.top_k, 1)).narrow(1, options.top_k - 1, 1);  // [B, 1]
    logits.masked_fill_(logits < kth, kNegInf);
  }
  if (options.top_p < 1.0) {
    auto [sorted, order] = logits.sort(1, /*descending=*/true);  // [B, V]
    const auto probs = sorted.softmax(1);
    // A word stays while the words before it hold less than top_p: the first always stays.
    sorted.masked_fill_(probs.cumsum(1) - probs >= options.top_p, kNegInf);
    logits = torch::full_like(logits, kNegInf).scatter(1, order, sorted);
  }
  return torch::multinomial(logits.softmax(1), 1).squeeze(1);  // [B]
}

}  // namespace

std::string to_string(SearchMethod method) {
  return kSearchMethodNames.name(method);
}

SearchMethod parse_search_method(const std::string& name) {
  return kSearchMethodNames.parse(name);
}

SearchOptions search_options_from(const Config& config, const Vocabulary& vocabulary) {
  SearchOptions options;
  options.method = config.get_parsed("decode.method", parse_search_method);
  options.beam_size = config.get<int64_t>("decode.beam_size");
  options.beam_groups = config.get<int64_t>("decode.beam_groups");
  options.diversity_penalty = config.get<double>("decode.diversity_penalty");
  options.max_length = config.get<int64_t>("decode.max_length");
  options.min_length = config.get<int64_t>("decode.min_length");
  options.length_penalty = config.get<double>("decode.length_penalty");
  options.block_unk = config.get<bool>("decode.block_unk");
  options.hard_read = config.get_parsed("decode.hard_read", parse_hard_read);
  options.n_best = config.get<int64_t>("decode.n_best");
  options.block_trigrams = config.get<bool>("decode.block_trigrams");
  for (const auto& word : config.get<std::vector<std::string>>("decode.bad_endings")) {
    if (vocabulary.contains(word)) options.bad_ending_ids.push_back(vocabulary.id(word));
  }
  options.temperature = config.get<double>("decode.temperature");
  options.top_k = config.get<int64_t>("decode.top_k");
  options.top_p = config.get<double>("decode.top_p");
  return options;
}

void validate(const SearchOptions& options) {
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
      std::isfinite(options.temperature) && options.temperature >= kMinTemperature,
      "decode.temperature must be a finite number >= 0.0001 (sampling near 0 is greedy search)");
  require(
      options.top_k >= 0, "decode.top_k must be >= 0 (0 = every word), got " + std::to_string(options.top_k));
  require(options.top_p > 0 && options.top_p <= 1, "decode.top_p must be in (0, 1]");
  require(
      options.beam_groups >= 1 &&
          (options.method != SearchMethod::beam || options.beam_size % options.beam_groups == 0),
      "decode.beam_groups must be >= 1 and divide decode.beam_size (" + std::to_string(options.beam_size) +
          "), got " + std::to_string(options.beam_groups));
  require(
      std::isfinite(options.diversity_penalty) && options.diversity_penalty >= 0,
      "decode.diversity_penalty must be a finite number >= 0");
  const int64_t kept = options.method == SearchMethod::beam ? options.beam_size : 1;
  require(
      options.n_best >= 1 && options.n_best <= kept,
      "decode.n_best must be in [1, " + std::to_string(kept) + "] (" +
          (options.method == SearchMethod::beam
               ? "decode.beam_size"
               : "one caption per image with decode.method=" + to_string(options.method)) +
          "), got " + std::to_string(options.n_best));
  require(
      options.start_id >= 0 && options.end_id >= 0 && options.unk_id >= 0 && options.pad_id >= 0 &&
          options.start_id != options.end_id && options.pad_id != options.end_id,
      "The <start>, <end> and <pad> ids must be >= 0, and <end> distinct from the others");
  require(
      options.unk_id != options.start_id && options.unk_id != options.end_id,
      "The <unk> id must differ from the <start> and <end> ids");
}

void forbid_words(torch::Tensor& log_probs, int64_t t, const SearchOptions& options) {
  log_probs.select(1, options.start_id).fill_(kNegInf);
  log_probs.select(1, options.pad_id).fill_(kNegInf);
  if (options.block_unk) log_probs.select(1, options.unk_id).fill_(kNegInf);
  if (t < options.min_length) log_probs.select(1, options.end_id).fill_(kNegInf);
}

void keep_an_exit(
    torch::Tensor& log_probs, const torch::Tensor& end_log_probs, const SearchOptions& options) {
  if (log_probs.device().is_cpu() && log_probs.scalar_type() == torch::kFloat && log_probs.is_contiguous()) {
    // A row is stuck only when every word is forbidden; the scan stops at its first allowed word,
    // among the first few of any real vocabulary.
    const int64_t rows = log_probs.size(0), vocab = log_probs.size(1);
    float* data = log_probs.data_ptr<float>();
    for (int64_t row = 0; row < rows; ++row) {
      const float* begin = data + row * vocab;
      if (std::all_of(begin, begin + vocab, [](float value) { return value == kNegInf; }))
        data[row * vocab + options.end_id] = std::max(end_log_probs[row].item<float>(), kStuckEndFloor);
    }
    return;
  }
  const auto stuck = (log_probs == kNegInf).all(1);  // [rows]
  auto end_column = log_probs.select(1, options.end_id);
  end_column.copy_(
      torch::where(stuck, end_log_probs.clamp_min(kStuckEndFloor).to(end_column.dtype()), end_column));
}

bool greedy_suffices(const SearchOptions& options) {
  return options.method != SearchMethod::sample &&
         (options.beam_size == 1 || options.method == SearchMethod::greedy) && options.n_best == 1 &&
         options.min_length == 0 && !options.block_unk;
}

std::vector<DecodedCaption> greedy_search(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options) {
  validate(options);
  if (!greedy_suffices(options)) {
    throw std::invalid_argument(
        "Greedy search cannot honour decode.beam_size > 1, decode.min_length, decode.block_unk or sampling; "
        "make_caption_search chooses another search for them");
  }
  return word_by_word(
      decoder, annotations, options, [](const torch::Tensor& log_probs) { return argmax_rows(log_probs); });
}

std::vector<DecodedCaption> sample_search(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options) {
  validate(options);
  return word_by_word(decoder, annotations, options, [&](const torch::Tensor& log_probs) {
    return sampled_words(log_probs, options);
  });
}

CaptionSearch::CaptionSearch(SearchMethod kind, const SearchOptions& options)
    : kind_(kind), options_(options) {
  validate(options_);
}

std::vector<DecodedCaption> CaptionSearch::search(
    CaptionDecoderImpl& decoder, const torch::Tensor& annotations) const {
  switch (kind_) {
    case SearchMethod::greedy:
      return greedy_search(decoder, annotations, options_);
    case SearchMethod::sample:
      return sample_search(decoder, annotations, options_);
    case SearchMethod::beam:
      break;
  }
  return beam_search(decoder, annotations, options_);
}

std::string CaptionSearch::describe() const {
  if (kind_ == SearchMethod::greedy) return "greedy";
  std::ostringstream text;
  if (kind_ == SearchMethod::beam) {
    text << "beam " << options_.beam_size;
    if (options_.beam_groups > 1)
      text << " (" << options_.beam_groups << " groups, diversity " << options_.diversity_penalty << ")";
    return text.str();
  }
  text << "sample";
  if (options_.temperature != 1.0) text << " T=" << options_.temperature;
  if (options_.top_k > 0) text << " top_k=" << options_.top_k;
  if (options_.top_p < 1.0) text << " top_p=" << options_.top_p;
  return text.str();
}

std::unique_ptr<CaptionSearch> make_caption_search(const SearchOptions& options) {
  validate(options);
  if (options.method == SearchMethod::sample)
    return std::make_unique<CaptionSearch>(SearchMethod::sample, options);
  if (greedy_suffices(options)) return std::make_unique<CaptionSearch>(SearchMethod::greedy, options);
  SearchOptions beam = options;
  if (options.method == SearchMethod::greedy) {
    // Greedy search under rules only beam search honours: a beam of one, one group.
    beam.method = SearchMethod::beam;
    beam.beam_size = 1;
    beam.beam_groups = 1;
  }
  return std::make_unique<CaptionSearch>(SearchMethod::beam, beam);
}

}  // namespace saccade
