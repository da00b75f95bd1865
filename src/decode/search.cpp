// Search options, greedy search batched over images, and the choice between greedy and beam.
#include "decode/search.h"

#include <ATen/core/grad_mode.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <stdexcept>

#include "config/config.h"

namespace saccade {

SearchOptions search_options_from(const Config& config) {
  SearchOptions options;
  options.beam_size = config.get<int64_t>("decode.beam_size");
  options.max_length = config.get<int64_t>("decode.max_length");
  options.min_length = config.get<int64_t>("decode.min_length");
  options.length_penalty = config.get<double>("decode.length_penalty");
  options.block_unk = config.get<bool>("decode.block_unk");
  options.hard_read = config.get_parsed("decode.hard_read", parse_hard_read);
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
      options.start_id >= 0 && options.end_id >= 0 && options.unk_id >= 0 &&
          options.start_id != options.end_id,
      "The <start> and <end> ids must be distinct and >= 0");
  require(
      options.unk_id != options.start_id && options.unk_id != options.end_id,
      "The <unk> id must differ from the <start> and <end> ids");
}

bool greedy_suffices(const SearchOptions& options) {
  return options.beam_size == 1 && options.min_length == 0 && !options.block_unk;
}

std::vector<DecodedCaption> greedy_search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations, const SearchOptions& options) {
  validate(options);
  if (!greedy_suffices(options)) {
    throw std::invalid_argument(
        "Greedy search cannot honour decode.beam_size > 1, decode.min_length or decode.block_unk; "
        "make_caption_search chooses beam search for them");
  }
  c10::InferenceMode inference;
  EvalModeGuard eval_mode(decoder);

  const int64_t batch = annotations.size(0);
  DecoderState state = decoder.init_state(annotations);
  const auto on_device = torch::TensorOptions().device(annotations.device());
  auto previous = torch::full({batch}, options.start_id, on_device.dtype(torch::kLong));  // [B]
  std::vector<torch::Tensor> words, log_probs, alphas;                   // per step: [B], [B], [B, L]
  auto finished = torch::zeros({batch}, on_device.dtype(torch::kBool));  // [B]
  // One step more than max_length words leaves room for the <end> after the last word.
  for (int64_t t = 0; t <= options.max_length; ++t) {
    DecoderStep step = decoder.step(state, previous, options.hard_read);
    const auto scores = torch::log_softmax(step.logits.to(torch::kFloat), 1);  // [B, V]
    auto [best, word] = scores.max(1);                                         // [B], [B]
    words.push_back(word);
    log_probs.push_back(best);
    alphas.push_back(step.alpha);
    finished = finished | (word == options.end_id);
    if (finished.all().item<bool>()) break;
    state = std::move(step.state);
    previous = word;
  }

  // The results go to the host once.
  const auto word_matrix = torch::stack(words, 1).cpu();                             // [B, S]
  const auto log_prob_matrix = torch::stack(log_probs, 1).cpu();                     // [B, S]
  const auto alpha_matrix = torch::stack(alphas, 1).to(torch::kCPU, torch::kFloat);  // [B, S, (N,) L]
  const auto word_access = word_matrix.accessor<int64_t, 2>();
  const auto log_prob_access = log_prob_matrix.accessor<float, 2>();
  const int64_t steps = word_matrix.size(1);

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

GreedySearch::GreedySearch(const SearchOptions& options) : options_(options) {
  validate(options_);
}

std::vector<DecodedCaption> GreedySearch::search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations) const {
  return greedy_search(decoder, annotations, options_);
}

BeamSearch::BeamSearch(const SearchOptions& options) : options_(options) {
  validate(options_);
}

std::vector<DecodedCaption> BeamSearch::search(
    AttentionLSTMDecoderImpl& decoder, const torch::Tensor& annotations) const {
  return beam_search(decoder, annotations, options_);
}

std::unique_ptr<CaptionSearch> make_caption_search(const SearchOptions& options) {
  validate(options);
  if (greedy_suffices(options)) return std::make_unique<GreedySearch>(options);
  return std::make_unique<BeamSearch>(options);
}

}  // namespace saccade
