// The decoders behind one interface (CaptionDecoderImpl): the Show-Attend-Tell attention LSTM
// (models/attention_lstm_decoder.h) and the Transformer decoder (models/transformer_decoder.h),
// with what both share: their options, the state a search carries between steps, and the factory
// that builds either.
//
//   DecoderOptions options = decoder_options_from(config);   // decoder.* keys
//   options.vocab_size = vocabulary.size();                  // V, from the data
//   options.annotation_dim = 2048;                           // D, from the encoder
//   CaptionDecoder decoder = build_decoder(options);         // decoder.kind: lstm | transformer
//
//   // Training (teacher forcing): one call for the whole caption.
//   DecoderOutput out = decoder->forward(annotations, tokens, lengths);
//   // out.logits [B, T, V] scores the word after each input token.
//
//   // Decoding: one call per word; the state expands for beams, then reorders within images.
//   DecoderState state = decoder->for_beams(decoder->init_state(annotations), K);   // [B K] rows
//   DecoderStep step = decoder->step(state, start_tokens);   // [B K] -> logits [B K, V]
//   state = step.state.reorder_beams(beam_origin);
//
// Shape legend: B batch, T steps, L = H*W locations, D annotation dim, E embedding dim,
// H LSTM hidden dim, V vocabulary, N attention heads (multihead only), G gate width (1 or D).
//
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "models/attention.h"

namespace saccade {

class ArchitectureKeys;
class Config;

// How much of the context passes into the LSTM (paper Sec. 4.2.1, "beta").
enum class Gate {
  none,    // beta = 1
  scalar,  // one sigmoid unit per step (the paper and the authors' code)
  vector,  // D sigmoid units, one per context channel (sgrvinod's tutorial)
};
std::string to_string(Gate gate);
// "none" | "scalar" | "vector"; throws std::invalid_argument naming the value otherwise.
Gate parse_gate(const std::string& name);

// How alpha becomes a context (the ContextReader): soft = expectation (Sec. 4.2); hard = a sampled
// location trained with REINFORCE (Sec. 4.1; decoding reads alpha's most likely location).
enum class AttentionMode { soft, hard };
std::string to_string(AttentionMode mode);
// "soft" | "hard"; throws std::invalid_argument naming the value otherwise.
AttentionMode parse_attention_mode(const std::string& name);

// How a hard-attention decoder reads the context when decoding (soft decoders ignore it).
enum class HardRead {
  argmax,       // the annotation at alpha's most likely location: the cell the model chose
  expectation,  // sum_i alpha_i a_i, as the expectation captions of training read it
};
std::string to_string(HardRead read);
// "argmax" | "expectation"; throws std::invalid_argument naming the value otherwise.
HardRead parse_hard_read(const std::string& name);

// What the LSTM's attention query f_att(a_i, .) reads at step t (Sec. 3.1.2, eq. 4).
enum class AttentionQuery {
  hidden,           // h_{t-1}: the paper
  hidden_and_word,  // h_{t-1} and E y_{t-1}, the word just written: W_h h_{t-1} + W_y E y_{t-1}
};
std::string to_string(AttentionQuery query);
// "hidden" | "hidden_and_word"; throws std::invalid_argument naming the value otherwise.
AttentionQuery parse_attention_query(const std::string& name);

// Where the LSTM's h_0 and c_0 come from (Sec. 3.1.2).
enum class InitialState {
  mean_annotation,  // tanh(f_init(mean_i a_i)): the paper; the state starts knowing the whole image
  learned,          // tanh of a learned vector, the same for every image: what the words say of the
                    // image comes through the attention
};
std::string to_string(InitialState initial);
// "mean_annotation" | "learned"; throws std::invalid_argument naming the value otherwise.
InitialState parse_initial_state(const std::string& name);

// Which decoder reads the grid.
enum class DecoderKind {
  lstm,         // the Show-Attend-Tell attention LSTM
  transformer,  // masked self-attention over the words, cross-attention to the grid
};
std::string to_string(DecoderKind kind);
// "lstm" | "transformer"; throws std::invalid_argument naming the value otherwise.
DecoderKind parse_decoder_kind(const std::string& name);
// config's decoder.kind; lstm when absent (a run saved before it existed). Throws ConfigError for
// another value.
DecoderKind decoder_kind_from(const Config& config);

struct DecoderOptions {
  DecoderKind kind = DecoderKind::lstm;
  // V: vocabulary size, including the special tokens. Comes from the data at run time, never from
  // the config; 0 = not set yet (validate rejects it).
  int64_t vocab_size = 0;
  // D: size of one annotation vector. Comes from the encoder at run time; 0 = not set yet.
  int64_t annotation_dim = 0;
  // E: word embedding size (the paper's m).
  int64_t embed_dim = 512;
  // H: LSTM hidden and cell size (the paper's n).
  int64_t hidden_dim = 512;
  // Attention kind, see attention.h: additive (the paper's) | dot | scaled_dot | general | multihead | local.
  std::string attention_kind = "additive";
  // A: the attention's own dimension (additive: MLP width; dot kinds: projected key size).
  int64_t attention_dim = 512;
  // N: heads, multihead only (must divide attention_dim).
  int64_t attention_heads = 1;
  // local only: cells on each side of the window's centre cell, and how the centre is chosen.
  int64_t attention_window = 2;
  LocalCentre attention_centre = LocalCentre::predicted;
  // [Hg, Wg] of the annotation grid. Comes from the encoder (encoder.grid) at run time; {0, 0} =
  // unknown, which only local attention refuses.
  std::array<int64_t, 2> grid{0, 0};
  // Where h_0 and c_0 come from.
  InitialState initial_state = InitialState::mean_annotation;
  // What the attention's query reads.
  AttentionQuery attention_query = AttentionQuery::hidden;
  // Whether the attention's scores read where it has looked (AttentionOptions::coverage).
  bool attention_coverage = false;
  // soft | hard.
  AttentionMode attention_mode = AttentionMode::soft;
  // Hard mode, training: the probability that a caption reads the expected context instead of
  // sampled locations (the paper's 0.5, Sec. 4.1).
  double hard_expectation = 0.5;
  // The context gate beta.
  Gate gate = Gate::scalar;
  // true: the paper's deep output layer (eq. 7); false: one linear layer on h_t.
  bool deep_output = true;
  // Dropout probability. LSTM: on the output path (h_t, and the deep output's tanh layer), never
  // in the recurrence; 0 = none. Transformer: on the embeddings, the attention weights, every
  // sublayer's output and the feed-forward's hidden layer.
  double dropout = 0.5;

  // Transformer only (see models/transformer_decoder.h): layers, heads N (dividing model_dim),
  // the model width, the feed-forward width, output weights tied to the embeddings, and the layer
  // whose cross-attention maps (every head) are the step's alpha (0-based; negative counts from
  // the last).
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t model_dim = 256;
  int64_t ffn_dim = 1024;
  bool tied_embeddings = false;
  int64_t maps_layer = -1;

  // The options of the attention module (D and H filled in from the fields above).
  AttentionOptions attention() const;
};

// Reads decoder.kind (lstm when absent: a run saved before it existed), then for the LSTM
// decoder.{embed_dim, hidden_dim, initial_state, attention.{kind, dim, heads, window, centre,
// query, coverage, mode, hard_expectation}, gate, deep_output, dropout} (initial_state,
// attention.query and attention.coverage as the paper's when absent: a run saved before them), for the
// Transformer decoder.{layers, heads, dim, ffn_dim, dropout, tied_embeddings, maps_layer}. vocab_size,
// annotation_dim and grid stay unset: the caller sets them from the vocabulary and the encoder. Throws
// ConfigError for a missing key or a bad value. Records the keys that shape the model in `architecture`, when
// given (models/architecture_keys.h).
DecoderOptions decoder_options_from(const Config& config, ArchitectureKeys* architecture = nullptr);

// Throws std::invalid_argument, one sentence per broken rule.
void validate(const DecoderOptions& options);

// Teacher-forced outputs. Positions t >= lengths[b] are padding: zeros everywhere.
struct DecoderOutput {
  torch::Tensor logits;  // [B, T, V] unnormalized scores of the word following tokens[b, t]
  torch::Tensor alphas;  // [B, T, L] ([B, T, N, L] for multihead and the Transformer) attention weights
  torch::Tensor gates;   // [B, T, G] beta per step; undefined when the gate is none
  // Hard mode: what each step's context averaged, like alphas: one-hot at the chosen location,
  // or alpha itself in the expectation rows. Undefined in soft mode.
  torch::Tensor weights;
  // Hard mode in training: [B] bool, the captions that read the expectation. Undefined otherwise.
  torch::Tensor expectation_rows;
};

// A decoder's state between steps, for greedy and beam search; each kind fills its own fields.
struct DecoderState {
  // LSTM:
  torch::Tensor h;         // [B, H]
  torch::Tensor c;         // [B, H]
  AttentionMemory memory;  // attention keys/values, computed once per image by init_state
  // Transformer, per layer: the keys and values of the words read so far, [B, N, K, t] (keys
  // transposed) and [B, N, t, K], and the cross-attention's keys and values of the grid,
  // [B, N, K, L] and [B, N, L, K] (once per image).
  std::vector<torch::Tensor> word_keys, word_values, grid_keys, grid_values;
  int64_t grid_beams = 1;  // rows per row of grid_keys and grid_values: an image's beams share them
  // The rows of grid_keys and grid_values the images read (int64 [B'], on their device) once some
  // have left a search, where the CPU kernels read them in place; undefined: every row, in order.
  torch::Tensor grid_images;
  int64_t steps = 0;  // words read so far (the Transformer's next position)

  // Rows `index` [B'] of everything, in that order: reorders beams or expands images to beams.
  // Refused (std::logic_error) where beams share the grid (grid_beams > 1): use reorder_beams.
  DecoderState index_select(const torch::Tensor& index) const;
  // The rows of images `images` [B'] (int64), in that order, each image's `beams` rows together
  // (image b's rows are b beams .. b beams + beams - 1): what the beams share is selected once per
  // image (read in place through an index where the CPU kernels read it), the rest per row. A
  // search drops the images it has finished with so. Refused (std::logic_error) where the grid is
  // shared by another number of rows.
  DecoderState select_images(const torch::Tensor& images, int64_t beams) const;
  // Rows `index` [B] of what differs between the beams of one image (h, c, the previous alpha,
  // the words' keys and values), for an index that only moves rows within their image: what
  // comes from the grid stays as it is.
  DecoderState reorder_beams(const torch::Tensor& index) const;
  // The Transformer's rows: the images that read the grid times grid_beams.
  int64_t grid_rows() const {
    return (grid_images.defined() ? grid_images.size(0) : grid_keys.front().size(0)) * grid_beams;
  }
};

// One decoding step.
struct DecoderStep {
  torch::Tensor logits;  // [B, V] unnormalized scores of the next word
  torch::Tensor alpha;   // [B, L] ([B, N, L] for multihead and the Transformer)
  torch::Tensor gate;    // [B, G]; undefined when the gate is none
  DecoderState state;    // the state after this step
  // Hard attention read at a location: one-hot where it read, like alpha. Undefined otherwise.
  torch::Tensor weights;
};

// What every decoder does: teacher-forced training in one call, and decoding one word per call.
class CaptionDecoderImpl : public torch::nn::Module {
 public:
  ~CaptionDecoderImpl() override = default;
  virtual const DecoderOptions& options() const = 0;

  // Teacher-forced pass over whole captions.
  //   annotations [B, L, D] float
  //   tokens      [B, T] int64: <start> w_1 .. w_{T-1}, padded; tokens[b, t] is y_t's predecessor
  //   lengths     [B] int64 in [0, T]: steps to run for caption b (its words + <end>)
  //   mask        optional [B, L] bool, true = real location (for padded grids)
  virtual DecoderOutput forward(
      const torch::Tensor& annotations,
      const torch::Tensor& tokens,
      const torch::Tensor& lengths,
      const torch::Tensor& mask = {}) = 0;

  // The state before the first word for annotations [B, L, D] (mask as in forward).
  virtual DecoderState init_state(const torch::Tensor& annotations, const torch::Tensor& mask = {}) = 0;

  // `state` [B rows] for beam search: each image's row repeated `beams` times, rows b K ..
  // b K + K - 1, what comes from the grid kept once per image where the decoder's kernels read it
  // so (the LSTM's attention memory: AttentionImpl::for_beams; the Transformer's grid keys and
  // values).
  virtual DecoderState for_beams(const DecoderState& state, int64_t beams) = 0;

  // One step from `state` given the previous words [B] (int64; <start> first). The same model as
  // forward: feeding forward's tokens one by one reproduces its logits and alphas. `read` and
  // `locations` concern hard attention (AttentionLSTMDecoderImpl::step); other decoders ignore them.
  virtual DecoderStep step(
      const DecoderState& state,
      const torch::Tensor& prev_tokens,
      HardRead read = HardRead::argmax,
      const torch::Tensor& locations = {}) = 0;
};
TORCH_MODULE(CaptionDecoder);

// A decoder that hands every call to another, `inner`: the base of those that change one call
// (the benches' and tests' decoders that steer or count the steps of a real one).
class ForwardingDecoderImpl : public CaptionDecoderImpl {
 public:
  explicit ForwardingDecoderImpl(std::shared_ptr<CaptionDecoderImpl> inner)
      : inner_(register_module("inner", std::move(inner))) {}
  const DecoderOptions& options() const override { return inner_->options(); }
  DecoderOutput forward(
      const torch::Tensor& annotations,
      const torch::Tensor& tokens,
      const torch::Tensor& lengths,
      const torch::Tensor& mask = {}) override {
    return inner_->forward(annotations, tokens, lengths, mask);
  }
  DecoderState init_state(const torch::Tensor& annotations, const torch::Tensor& mask = {}) override {
    return inner_->init_state(annotations, mask);
  }
  DecoderState for_beams(const DecoderState& state, int64_t beams) override {
    return inner_->for_beams(state, beams);
  }
  DecoderStep step(
      const DecoderState& state,
      const torch::Tensor& prev_tokens,
      HardRead read = HardRead::argmax,
      const torch::Tensor& locations = {}) override {
    return inner_->step(state, prev_tokens, read, locations);
  }

 private:
  std::shared_ptr<CaptionDecoderImpl> inner_;
};

// Checks a teacher-forced batch (tokens [B, T] with T >= 1, annotations [B, L, D], lengths [B] in
// [0, T]) and returns the lengths. Throws std::invalid_argument naming the shape or value.
std::vector<int64_t> checked_lengths(
    const torch::Tensor& annotations, const torch::Tensor& tokens, const torch::Tensor& lengths);

// The data pointer and version counter of each of `module`'s parameters: two calls give the same
// when no parameter was replaced or changed in place (an optimizer step) between them, so what a
// decoder derived from its weights (fused or packed copies) can be kept that long.
std::vector<int64_t> parameter_versions(const torch::nn::Module& module);

// Validates `options` and builds the decoder of options.kind.
CaptionDecoder build_decoder(const DecoderOptions& options);

}  // namespace saccade
