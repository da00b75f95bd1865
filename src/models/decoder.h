// The decoders behind one interface (CaptionDecoderImpl): the Show-Attend-Tell attention LSTM
// (models/attention_lstm_decoder.h) and the Transformer decoder (models/transformer_decoder.h),
// with what both share: the state a search carries between steps and the factory that builds
// either from its options (models/decoder_options.h).
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

#include <memory>
#include <vector>

#include "models/decoder_options.h"

namespace saccade {

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
  //   read        hard attention outside training: what each word reads, as in step (in training,
  //               locations are sampled from alpha); other decoders ignore it
  //   expectation_rows  hard attention in training: [B] bool, the captions that read the expected
  //               context (undefined: each with probability decoder.attention.hard_expectation);
  //               other decoders ignore it
  virtual DecoderOutput forward(
      const torch::Tensor& annotations,
      const torch::Tensor& tokens,
      const torch::Tensor& lengths,
      const torch::Tensor& mask = {},
      HardRead read = HardRead::argmax,
      const torch::Tensor& expectation_rows = {}) = 0;

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
      const torch::Tensor& mask = {},
      HardRead read = HardRead::argmax,
      const torch::Tensor& expectation_rows = {}) override {
    return inner_->forward(annotations, tokens, lengths, mask, read, expectation_rows);
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
