// AttentionLSTMDecoder: the Show-Attend-Tell LSTM decoder (Xu et al. 2015, Sec. 3.1.2), with
// switches for the gate, the deep output and the attention kind, behind the decoders' interface
// (models/decoder.h, which builds it for decoder.kind=lstm).
//
//   AttentionLSTMDecoder decoder(options);   // or build_decoder(options) with decoder.kind lstm
//
// Shape legend: B batch, T steps, L = H*W locations, D annotation dim, E embedding dim,
// H LSTM hidden dim, V vocabulary, N attention heads (multihead only), G gate width (1 or D).
//
// The model, per step t with y_{t-1} the previous word (y_0 = <start>):
//   h_0 = tanh(f_init_h(mean_i a_i)), c_0 = tanh(f_init_c(mean_i a_i))          (Sec. 3.1.2)
//     (decoder.initial_state=learned: h_0 = tanh(theta_h), c_0 = tanh(theta_c), the same for
//      every image, so what the words say of the image comes through the attention)
//   alpha_t, z_t = attention(a, h_{t-1})                                          eq. 4-6
//     (decoder.attention.query=hidden_and_word: the query W_h h_{t-1} + W_y E y_{t-1} also reads
//      the word just written, so the step after "red" can find the red object again)
//   beta_t = sigmoid(f_beta(h_{t-1}))   (gate: scalar -> 1 unit, vector -> D units, none -> 1)
//   i,f,g,o = W [E y_{t-1}; beta_t z_t] + U h_{t-1} + b                          eq. 1
//   c_t = f * c_{t-1} + i * g, h_t = o * tanh(c_t)                                eq. 2, 3
//   deep output:  logits = L_o dropout(tanh(E y_{t-1} + L_h dropout(h_t) + L_z beta_t z_t))   eq. 7
//                 (the paper has no tanh; the authors' arctic-captions code applies it)
//   otherwise:    logits = L_o dropout(h_t)
//
// Speed: everything that does not depend on h_{t-1} is outside the time loop: the attention keys
// (once per image), the embedding side of the LSTM input (one GEMM over all steps) and the output
// layer (one GEMM over all real steps after the loop). Inside the loop, the maps of h_{t-1}
// (attention query, gate, LSTM recurrence) are one GEMM and the context side of the LSTM input
// another; the weight gradients of both are one GEMM each after the backward pass through time
// (TimeSharedWeight), not 2T thin ones. The additive attention and the soft read are fused kernels
// (attention.cpp). Captions of different lengths shrink the active batch step by step: rows are
// sorted by length (longest first) and step t runs only the rows still active.
#pragma once

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/rnn.h>
#include <torch/nn/pimpl.h>

#include <memory>
#include <vector>

#include "models/attention.h"
#include "models/decoder.h"

namespace saccade {

// Parameter names (checkpoints load by name):
//   embedding.weight [V, E]
//   init_h.{weight [H, D], bias}, init_c.{weight [H, D], bias}        f_init_h, f_init_c (mean_annotation)
//   initial_h [H], initial_c [H]                                       theta_h, theta_c (learned)
//   attention.*                                                        see attention.h
//   query_word.weight [Q, E]                                           W_y (query hidden_and_word only)
//   gate.{weight [G, H], bias}                                         f_beta (absent for none)
//   lstm.{weight_ih [4H, E+D], weight_hh [4H, H], bias_ih, bias_hh}   PyTorch LSTMCell layout,
//                                                                      gates i, f, g, o
//   out_h.{weight [E, H], bias}, out_z.{weight [E, D], bias}          L_h, L_z (deep output only)
//   out.{weight [V, E or H], bias}                                     L_o
class AttentionLSTMDecoderImpl : public CaptionDecoderImpl {
 public:
  explicit AttentionLSTMDecoderImpl(const DecoderOptions& options);
  const DecoderOptions& options() const override { return options_; }

  // See CaptionDecoderImpl. Rows already sorted by length, longest first, skip a reordering copy
  // of the annotations.
  DecoderOutput forward(
      const torch::Tensor& annotations,
      const torch::Tensor& tokens,
      const torch::Tensor& lengths,
      const torch::Tensor& mask = {},
      HardRead read = HardRead::argmax,
      const torch::Tensor& expectation_rows = {}) override;

  // h_0, c_0 and the attention keys for annotations [B, L, D] (mask as in forward).
  DecoderState init_state(const torch::Tensor& annotations, const torch::Tensor& mask = {}) override;
  // h and c per beam; the attention memory as the attention kind keeps it for beams.
  DecoderState for_beams(const DecoderState& state, int64_t beams) override;

  // See CaptionDecoderImpl. `read` applies to hard attention outside training (in training,
  // locations are sampled from alpha); given `locations` (int64 [B] with one head, [B, N] with
  // N), hard attention reads those, in any mode.
  DecoderStep step(
      const DecoderState& state,
      const torch::Tensor& prev_tokens,
      HardRead read = HardRead::argmax,
      const torch::Tensor& locations = {}) override;

  torch::nn::Embedding embedding{nullptr};
  torch::nn::Linear init_h{nullptr}, init_c{nullptr};
  torch::Tensor initial_h, initial_c;
  Attention attention{nullptr};
  torch::nn::Linear query_word{nullptr};
  torch::nn::Linear gate{nullptr};
  torch::nn::LSTMCell lstm{nullptr};
  torch::nn::Linear out_h{nullptr}, out_z{nullptr}, out{nullptr};

 private:
  struct Recurrence;
  struct WordInput;
  struct CellOutput;

  // The per-step weights, fused once per call: the maps of h_{t-1} stacked into one matrix.
  Recurrence recurrence() const;
  // recurrence() for step(): without autograd (decoding, one call per word) the fused weights are
  // kept between calls while no parameter changed. Not thread-safe.
  Recurrence step_recurrence();
  // forward's captions that read the expected context in training: `given` (checked), or each of
  // annotations' B rows with probability hard_expectation.
  torch::Tensor training_expectation_rows(const torch::Tensor& given, const torch::Tensor& annotations) const;
  // One step for the first n rows of h, c and memory: attention read by `reader`, gate, LSTM.
  CellOutput cell(
      Recurrence& weights,
      const AttentionMemory& memory,
      const WordInput& word,
      const torch::Tensor& h,
      const torch::Tensor& c,
      const ContextReader& reader);
  // Word scores from h_t [N, H], the gated context [N, D] and E y_{t-1} [N, E]: [N, V].
  torch::Tensor readout(
      Recurrence& weights, const torch::Tensor& h, const torch::Tensor& context, const torch::Tensor& emb);

  DecoderOptions options_;
  std::shared_ptr<Recurrence> step_weights_;  // step_recurrence()'s cache
  std::vector<int64_t> step_weights_key_;     // parameter_versions() when it was made
};
TORCH_MODULE(AttentionLSTMDecoder);

}  // namespace saccade
