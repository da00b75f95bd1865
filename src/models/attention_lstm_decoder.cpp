// AttentionLSTMDecoder: teacher-forced forward with a shrinking active batch, and the step API
// (see attention_lstm_decoder.h).
#include "models/attention_lstm_decoder.h"

#include <torch/torch.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "kernels/attention_kernels.h"
#include "kernels/lstm_cell.h"
#include "kernels/packed_linear.h"
#include "kernels/time_shared.h"

namespace saccade {

// The weights every step uses, prepared once per call so the loop only multiplies. The two
// per-step products use TimeSharedWeight: their weight gradients are one GEMM each after the loop.
struct AttentionLSTMDecoderImpl::Recurrence {
  TimeSharedWeight h_weight;      // [H, Q + G + 4H]: attention query | gate | LSTM U, transposed
  TimeSharedWeight input_weight;  // [E + D, 4H]: LSTM W for [E y_{t-1}; beta z], transposed
  torch::Tensor query_bias;       // [Q] or undefined
  torch::Tensor gate_bias;        // [G] or undefined
  torch::Tensor input_bias;       // [4H]: both LSTM biases
  int64_t query_size = 0;         // Q; 0 when the query is h itself
  int64_t gate_size = 0;          // G; 0 without a gate
  PackedWeights packed;           // packs of the attention and output layers, for decoding batches
};

// The previous word's share of the LSTM input, one of two forms: its gates W_E E y_{t-1} + b,
// multiplied for every step at once (forward), or E y_{t-1} itself, which a decoding step
// multiplies together with the context by the whole input weight: one pass over its rows rather
// than two over strided blocks of them. With the query hidden_and_word, also its share of the
// attention query, W_y E y_{t-1}.
struct AttentionLSTMDecoderImpl::WordInput {
  torch::Tensor gates;     // [n, 4H] or undefined
  torch::Tensor embedded;  // [n, E] or undefined
  torch::Tensor query;     // [n, Q] or undefined
};

struct AttentionLSTMDecoderImpl::CellOutput {
  torch::Tensor h;        // [n, H]
  torch::Tensor c;        // [n, H]
  torch::Tensor context;  // [n, D] beta * z
  torch::Tensor alpha;    // [n, L] or [n, N, L]
  torch::Tensor weights;  // like alpha: what the context averaged
  torch::Tensor gate;     // [n, G] or undefined
};

AttentionLSTMDecoderImpl::AttentionLSTMDecoderImpl(const DecoderOptions& options) : options_(options) {
  validate(options_);
  const int64_t V = options.vocab_size, D = options.annotation_dim, E = options.lstm.embed_dim,
                H = options.lstm.hidden_dim;
  embedding = register_module("embedding", torch::nn::Embedding(V, E));
  if (options.lstm.initial_state == InitialState::learned) {
    initial_h = register_parameter("initial_h", torch::zeros({H}));
    initial_c = register_parameter("initial_c", torch::zeros({H}));
  } else {
    init_h = register_module("init_h", torch::nn::Linear(D, H));
    init_c = register_module("init_c", torch::nn::Linear(D, H));
  }
  attention = register_module("attention", build_attention(options.attention()));
  if (options.lstm.attention_query == AttentionQuery::hidden_and_word) {
    query_word = register_module(
        "query_word", torch::nn::Linear(torch::nn::LinearOptions(E, attention->query_size()).bias(false)));
  }
  if (options.lstm.gate != Gate::none) {
    gate = register_module("gate", torch::nn::Linear(H, options.lstm.gate == Gate::scalar ? 1 : D));
  }
  lstm = register_module("lstm", torch::nn::LSTMCell(E + D, H));
  if (options.lstm.deep_output) {
    out_h = register_module("out_h", torch::nn::Linear(H, E));
    out_z = register_module("out_z", torch::nn::Linear(D, E));
  }
  out = register_module("out", torch::nn::Linear(options.lstm.deep_output ? E : H, V));
  // Small embeddings (as sgrvinod's tutorial): the deep output adds E y_{t-1} to L_h h_t unscaled.
  torch::NoGradGuard no_grad;
  embedding->weight.uniform_(-0.1, 0.1);
}

AttentionLSTMDecoderImpl::Recurrence AttentionLSTMDecoderImpl::recurrence() const {
  std::vector<torch::Tensor> h_weights;
  const auto query_weight = attention->query_weight();
  if (query_weight.defined()) h_weights.push_back(query_weight);
  if (gate) h_weights.push_back(gate->weight);
  h_weights.push_back(lstm->weight_hh);
  return {
      TimeSharedWeight(torch::cat(h_weights).t()),  // [H, Q + G + 4H]
      TimeSharedWeight(lstm->weight_ih.t()),        // [E + D, 4H]
      attention->query_bias(),                      // [Q]
      gate ? gate->bias : torch::Tensor(),          // [G]
      lstm->bias_ih + lstm->bias_hh,                // [4H]
      query_weight.defined() ? query_weight.size(0) : 0,
      gate ? gate->weight.size(0) : 0,
      PackedWeights()};
}

AttentionLSTMDecoderImpl::Recurrence AttentionLSTMDecoderImpl::step_recurrence() {
  if (torch::GradMode::is_enabled()) return recurrence();
  auto key = parameter_versions(*this);
  if (!step_weights_ || key != step_weights_key_) {
    step_weights_ = std::make_shared<Recurrence>(recurrence());
    step_weights_key_ = std::move(key);
  }
  return *step_weights_;
}

AttentionLSTMDecoderImpl::CellOutput AttentionLSTMDecoderImpl::cell(
    Recurrence& w,
    const AttentionMemory& memory,
    const WordInput& word,
    const torch::Tensor& h,
    const torch::Tensor& c,
    const ContextReader& reader) {
  const int64_t Q = w.query_size, G = w.gate_size, H = options_.lstm.hidden_dim;
  // One product for every map of h_{t-1}, split in one autograd node: query | gate | U h.
  const auto parts = w.h_weight.multiply(h).split_with_sizes({Q, G, 4 * H}, 1);  // [n, Q], [n, G], [n, 4H]
  auto query = Q > 0 ? parts[0] : h;                                             // [n, Q]
  if (w.query_bias.defined()) query = query + w.query_bias;                      // [n, Q]
  if (word.query.defined()) query = query + word.query;                          // [n, Q]
  const auto attended = attention->attend(memory, query, reader);                // eq. 4-6
  CellOutput out;
  out.alpha = attended.alpha;      // [n, L] or [n, N, L]
  out.weights = attended.weights;  // [n, L] or [n, N, L]
  out.context = attended.context;  // [n, D]
  if (G > 0) {
    out.gate = torch::sigmoid(parts[1] + w.gate_bias);  // [n, G]  beta
    out.context = out.gate * out.context;               // [n, D]
  }
  const auto input_gates =
      word.embedded.defined()
          ? w.packed.linear(torch::cat({word.embedded, out.context}, 1), lstm->weight_ih, w.input_bias)
          : word.gates + w.input_weight.multiply(out.context, options_.lstm.embed_dim);  // [n, 4H]
  const auto gates = input_gates + parts[2];                                             // [n, 4H] eq. 1
  std::tie(out.h, out.c) = lstm_cell(gates, c);  // [n, H] each, eq. 2-3
  return out;
}

torch::Tensor AttentionLSTMDecoderImpl::readout(
    Recurrence& w, const torch::Tensor& h, const torch::Tensor& context, const torch::Tensor& emb) {
  const double p = options_.dropout;
  const bool train = is_training();
  auto& packed = w.packed;
  if (!options_.lstm.deep_output)
    return packed.linear(torch::dropout(h, p, train), out->weight, out->bias);  // [N, V]
  // eq. 7 with the authors' tanh: L_o(tanh(E y_{t-1} + L_h h_t + L_z z_t)).
  const auto hidden = torch::tanh(
      emb + packed.linear(torch::dropout(h, p, train), out_h->weight, out_h->bias) +
      packed.linear(context, out_z->weight, out_z->bias));                         // [N, E]
  return packed.linear(torch::dropout(hidden, p, train), out->weight, out->bias);  // [N, V]
}

DecoderState AttentionLSTMDecoderImpl::init_state(
    const torch::Tensor& annotations, const torch::Tensor& mask) {
  // Keys once per image; checks the shapes. Products with gradients are never packed (a fresh
  // PackedWeights hands them to torch::linear).
  auto packed = torch::GradMode::is_enabled() ? PackedWeights() : step_recurrence().packed;
  auto memory = attention->remember(annotations, mask, packed);
  DecoderState state;
  if (!init_h) {
    const int64_t B = annotations.size(0);
    state.h = torch::tanh(initial_h).expand({B, -1}).contiguous();  // h_0 [B, H]
    state.c = torch::tanh(initial_c).expand({B, -1}).contiguous();  // c_0 [B, H]
    state.memory = std::move(memory);
    return state;
  }
  // The mean annotation over the locations the mask keeps: the context under uniform weights, by
  // the context's kernel (LibTorch's mean read the grid at a third of its speed).
  const auto kept = memory.mask.defined()
                        ? memory.mask.to(annotations.scalar_type())
                        : torch::ones(annotations.sizes().slice(0, 2), annotations.options());
  const auto uniform = kept / kept.sum(1, /*keepdim=*/true).clamp_min(1.0);                     // [B, L]
  const auto mean = expected_value(uniform.unsqueeze(1), annotations.unsqueeze(1)).squeeze(1);  // [B, D]
  state.h = torch::tanh(packed.linear(mean, init_h->weight, init_h->bias));                     // h_0 [B, H]
  state.c = torch::tanh(packed.linear(mean, init_c->weight, init_c->bias));                     // c_0 [B, H]
  state.memory = std::move(memory);
  return state;
}

DecoderState AttentionLSTMDecoderImpl::for_beams(const DecoderState& state, int64_t beams) {
  const auto rows =
      torch::arange(state.h.size(0), state.h.options().dtype(torch::kLong)).repeat_interleave(beams);
  DecoderState expanded = state.reorder_beams(rows);  // h, c
  expanded.memory = attention->for_beams(state.memory, beams);
  return expanded;
}

namespace {

// A batch's rows ordered longest caption first, so the rows still running at step t are a
// prefix. The sort is stable: a batch that is already sorted stays as it is and nothing is copied.
struct LongestFirst {
  std::vector<int64_t> order;  // order[r]: the batch row at sorted position r
  bool reordered = false;
  torch::Tensor index;  // order on the batch's device

  LongestFirst(const std::vector<int64_t>& length, const torch::Device& device) : order(length.size()) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return length[x] > length[y]; });
    reordered = !std::is_sorted(order.begin(), order.end());
    index = torch::tensor(order, torch::kLong).to(device);
  }
  torch::Tensor sorted(const torch::Tensor& x) const {
    return reordered && x.defined() ? x.index_select(0, index) : x;
  }
};

// Where the real steps lie: the recurrence appends step t's n_t rows (a prefix of the sorted
// batch) to time-major lists at offsets[t]; outputs are batch-major [B, T, ...] in the original
// row order, zeros at padding.
class StepRows {
 public:
  StepRows(
      const std::vector<int64_t>& length,
      const LongestFirst& batch,
      const std::vector<int64_t>& offsets,
      int64_t T,
      const torch::Device& device)
      : B_(static_cast<int64_t>(length.size())), T_(T) {
    std::vector<int64_t> rows, emb_rows, targets;
    for (int64_t r = 0; r < B_; ++r) {
      for (int64_t t = 0; t < length[batch.order[r]]; ++t) {
        rows.push_back(offsets[t] + r);
        emb_rows.push_back(t * B_ + r);
        targets.push_back(batch.order[r] * T + t);
      }
    }
    dense_ = static_cast<int64_t>(rows.size()) == B_ * T && !batch.reordered;  // no padding, rows in place
    const auto to_index = [&](const std::vector<int64_t>& values) {
      return torch::tensor(values, torch::kLong).to(device);
    };
    row_index_ = to_index(rows);
    emb_index_ = to_index(emb_rows);
    target_index_ = to_index(targets);
  }

  // The real steps' rows [N, ...], batch-major, of per-step tensors.
  torch::Tensor gather(const std::vector<torch::Tensor>& steps) const {
    return torch::cat(steps).index_select(0, row_index_);
  }
  // The same of a time-major [T * B, ...] tensor (row t * B + r for sorted row r).
  torch::Tensor gather_time_major(const torch::Tensor& x) const { return x.index_select(0, emb_index_); }
  // [N, ...] -> [B, T, ...], zeros at padding.
  torch::Tensor scatter(const torch::Tensor& x) const {
    std::vector<int64_t> shape = {B_, T_}, flat = {B_ * T_};
    shape.insert(shape.end(), x.sizes().begin() + 1, x.sizes().end());
    flat.insert(flat.end(), x.sizes().begin() + 1, x.sizes().end());
    return dense_ ? x.view(shape)
                  : torch::zeros(flat, x.options()).index_copy(0, target_index_, x).view(shape);
  }

 private:
  int64_t B_, T_;
  bool dense_ = false;
  torch::Tensor row_index_, emb_index_, target_index_;
};

}  // namespace

torch::Tensor AttentionLSTMDecoderImpl::training_expectation_rows(
    const torch::Tensor& given, const torch::Tensor& annotations) const {
  const int64_t B = annotations.size(0);
  if (!given.defined()) return torch::rand({B}, annotations.options()) < options_.lstm.hard_expectation;
  TORCH_CHECK(
      given.dim() == 1 && given.size(0) == B && given.scalar_type() == torch::kBool,
      "expectation_rows must be [", B, "] bool, got ", given.sizes(), " ", given.scalar_type());
  return given.to(annotations.device());
}

DecoderOutput AttentionLSTMDecoderImpl::forward(
    const torch::Tensor& annotations,
    const torch::Tensor& tokens,
    const torch::Tensor& lengths,
    const torch::Tensor& mask,
    HardRead read,
    const torch::Tensor& expectation_rows_given) {
  const std::vector<int64_t> length = checked_lengths(annotations, tokens, lengths);
  const int64_t B = tokens.size(0), T = tokens.size(1), E = options_.lstm.embed_dim,
                H = options_.lstm.hidden_dim;

  const LongestFirst batch(length, annotations.device());
  const auto sorted = [&](const torch::Tensor& x) { return batch.sorted(x); };

  DecoderState state = init_state(sorted(annotations), sorted(mask));
  Recurrence w = recurrence();
  const bool hard =
      options_.attention_mode == AttentionMode::hard && (is_training() || read == HardRead::argmax);
  torch::Tensor expectation_rows;  // [B] bool
  if (hard && is_training())
    expectation_rows = training_expectation_rows(expectation_rows_given, annotations);
  const HardContextReader hard_reader(is_training(), sorted(expectation_rows));
  const ContextReader& reader = hard ? static_cast<const ContextReader&>(hard_reader) : soft_context_reader();
  const auto emb = embedding(sorted(tokens).t());  // [T, B, E]  E y_{t-1}
  const auto x_gates =
      (w.input_weight.multiply(emb.reshape({T * B, E})) + w.input_bias).view({T, B, 4 * H});  // [T, B, 4H]
  const auto x_steps = x_gates.unbind(0);  // T x [B, 4H]; one autograd node for all steps
  std::vector<torch::Tensor> query_steps;  // T x [B, Q]: W_y E y_{t-1}, hidden_and_word only
  if (query_word) query_steps = query_word(emb).unbind(0);
  const auto prefix = [](const std::vector<torch::Tensor>& steps, int64_t t, int64_t n) {
    if (steps.empty()) return torch::Tensor();
    return n < steps[t].size(0) ? steps[t].narrow(0, 0, n) : steps[t];
  };

  // The recurrence over a shrinking prefix of rows; step t's n_t rows are appended to the packed
  // (time-major) lists at offsets[t]. Slicing only when n_t drops keeps autograd from building a
  // full-size gradient per step for every sliced tensor.
  std::vector<torch::Tensor> hs, contexts, alphas, weights, betas;
  std::vector<int64_t> offsets;
  AttentionMemory memory = state.memory;
  torch::Tensor h = state.h, c = state.c;  // [B, H]
  for (int64_t t = 0, packed = 0; t < T; ++t) {
    int64_t n = 0;
    while (n < B && length[batch.order[n]] > t) ++n;
    if (n == 0 && t > 0) break;
    if (n < memory.size()) memory = memory.head(n);
    if (n < h.size(0)) {
      h = h.narrow(0, 0, n);  // [n, H]
      c = c.narrow(0, 0, n);  // [n, H]
    }
    auto out = cell(w, memory, {prefix(x_steps, t, n), {}, prefix(query_steps, t, n)}, h, c, reader);
    h = out.h;  // [n, H]
    c = out.c;  // [n, H]
    memory.history = attention->after_step(memory.history, out.alpha);
    hs.push_back(out.h);
    contexts.push_back(out.context);
    alphas.push_back(out.alpha);
    weights.push_back(out.weights);
    betas.push_back(out.gate);
    offsets.push_back(packed);
    packed += n;
  }

  // Real steps in batch-major order (original row b, step t), then one output GEMM for them all.
  const StepRows steps(length, batch, offsets, T, annotations.device());

  DecoderOutput output;
  const auto context_rows = options_.lstm.deep_output ? steps.gather(contexts) : torch::Tensor();  // [N, D]
  const auto emb_rows = options_.lstm.deep_output ? steps.gather_time_major(emb.reshape({T * B, E}))
                                                  : torch::Tensor();                    // [N, E]
  output.logits = steps.scatter(readout(w, steps.gather(hs), context_rows, emb_rows));  // [B, T, V]
  output.alphas = steps.scatter(steps.gather(alphas));                                  // [B, T, (N,) L]
  if (gate) output.gates = steps.scatter(steps.gather(betas));                          // [B, T, G]
  if (hard) output.weights = steps.scatter(steps.gather(weights));                      // [B, T, (N,) L]
  output.expectation_rows = expectation_rows;                                           // [B]
  return output;
}

DecoderStep AttentionLSTMDecoderImpl::step(
    const DecoderState& state,
    const torch::Tensor& prev_tokens,
    HardRead read,
    const torch::Tensor& locations) {
  if (prev_tokens.dim() != 1 || prev_tokens.size(0) != state.h.size(0)) {
    throw std::invalid_argument(
        "step expects previous tokens [" + std::to_string(state.h.size(0)) + "], got " +
        c10::str(prev_tokens.sizes()));
  }
  Recurrence w = step_recurrence();
  const auto emb = embedding(prev_tokens);  // [B, E]
  const HardContextReader hard_reader(is_training(), {}, locations);
  const bool hard = options_.attention_mode == AttentionMode::hard &&
                    (is_training() || read == HardRead::argmax || locations.defined());
  const auto word_query = query_word ? w.packed.linear(emb, query_word->weight) : torch::Tensor();  // [B, Q]
  auto out = cell(
      w, state.memory, {{}, emb, word_query}, state.h, state.c,
      hard ? static_cast<const ContextReader&>(hard_reader) : soft_context_reader());
  DecoderStep step;
  step.logits = readout(w, out.h, out.context, emb);  // [B, V]
  step.alpha = out.alpha;
  step.gate = out.gate;
  step.state.h = out.h;
  step.state.c = out.c;
  step.state.memory = state.memory;
  step.state.memory.history = attention->after_step(state.memory.history, out.alpha);
  if (hard) step.weights = out.weights;
  return step;
}

}  // namespace saccade
