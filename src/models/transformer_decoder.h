// TransformerDecoder: a Transformer decoder (Vaswani et al. 2017) that writes captions over the
// annotation grid, behind the same interface as the attention LSTM (models/decoder.h).
//
//   DecoderOptions options = decoder_options_from(config);   // decoder=transformer
//   CaptionDecoder decoder = build_decoder(options);
//
// Shape legend: B batch, T steps, L locations, D annotation dim, d model width (decoder.dim),
// N heads, K = d / N, V vocabulary.
//
// The model, with y_0 = <start>:
//   grid  g_i = W_g a_i + b_g                                      (grid_proj: D -> d)
//   input x_t = sqrt(d) E y_{t-1} + PE(t)                          (1D sinusoidal, models/grid_position.h)
//   layers of TransformerDecoderLayer (below; its attention is models/transformer.h's): masked
//   self-attention over the words so far, cross-attention to g, feed-forward; post-norm.
//   logits = x_t W_o^T + b_o                                       (W_o = E when tied_embeddings)
// Training runs all T positions in one pass under the causal mask: position t never sees a later
// word. Decoding keeps, per layer, the keys and values of the words read so far (DecoderState
// word_keys/word_values) and the grid's (grid_keys/grid_values, once per image, shared by its
// beams): a step projects only the new word and attends over t + 1 keys, so it costs O(t), not a
// pass over the prefix.
// The keys are kept transposed and contiguous, [B, N, K, t], as the scores' product reads them.
// Products that need no gradient run on packed copies of the weights, kept while the weights do
// not change (kernels/packed_linear.h; bf16 copies inside a bf16 InferencePrecision); so one
// decoder must not decode from two threads at once, as the LSTM's fused step weights forbid too.
// alpha is layer maps_layer's cross-attention, every head: [B, N, L] per step, [B, T, N, L] in
// forward, as multihead attention's (overlays draw the heads' mean or each head).
//
// Parameter names: embedding.weight [V, d], grid_proj.{weight [d, D], bias},
// layers.<i>.{self_attn, multihead_attn}.{in_proj_weight, in_proj_bias, out_proj.*},
// layers.<i>.{linear1, linear2, norm1, norm2, norm3}.*, out_bias [V], and out_weight [V, d]
// unless tied.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include "models/decoder.h"
#include "models/transformer.h"

namespace saccade {

// What a decoder layer returns.
struct DecoderLayerOutput {
  torch::Tensor x;             // [B, T, D]
  torch::Tensor keys_t;        // [B, N, K, S + T]: the self-attention's keys, transposed, earlier words first
  torch::Tensor values;        // [B, N, S + T, K]: its values
  torch::Tensor grid_weights;  // [B, N, T, L]: the cross-attention's weights over the grid
};

// One post-norm Transformer decoder layer, as torch.nn.TransformerDecoderLayer with batch_first
// and ReLU (and its parameter names: self_attn, multihead_attn, linear1, linear2, norm1..3):
//   x = LayerNorm_1(x + dropout(SelfAttention(x, mask)))          the words
//   x = LayerNorm_2(x + dropout(CrossAttention(x, grid)))         queries from the words, keys and
//                                                                 values from the grid
//   x = LayerNorm_3(x + dropout(W_2 dropout(relu(W_1 x + b_1)) + b_2))
class TransformerDecoderLayerImpl : public torch::nn::Module {
 public:
  TransformerDecoderLayerImpl(int64_t dim, int64_t heads, int64_t ffn_dim, double dropout);
  // x [B, T, D]: new positions after S earlier ones whose self-attention keys (transposed) and
  // values are past_keys_t [B, N, K, S] and past_values [B, N, S, K] (undefined: S = 0).
  // grid_keys_t [B, N, K, L], grid_values [B, N, L, K]: multihead_attn->project(grid, 1), transposed,
  // and (grid, 2); grid_images: the rows of those that x's images read (undefined: all, in
  // order). mask: additive [T, S + T] or undefined.
  DecoderLayerOutput forward(
      const torch::Tensor& x,
      const torch::Tensor& past_keys_t,
      const torch::Tensor& past_values,
      const torch::Tensor& grid_keys_t,
      const torch::Tensor& grid_values,
      const torch::Tensor& mask = {},
      PackedWeights packed = {},
      const torch::Tensor& grid_images = {});

  TransformerAttention self_attn{nullptr}, multihead_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr}, norm3{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(TransformerDecoderLayer);

// The causal mask of `count` positions: [count, count], 0 on and below the diagonal, -inf above
// (position t sees positions 0 .. t).
torch::Tensor causal_mask(int64_t count, const torch::TensorOptions& options);

class TransformerDecoderImpl : public CaptionDecoderImpl {
 public:
  // Validates `options` (kind transformer).
  explicit TransformerDecoderImpl(const DecoderOptions& options);
  const DecoderOptions& options() const override { return options_; }

  // See CaptionDecoderImpl. A mask is refused: the Transformer reads whole grids.
  DecoderOutput forward(
      const torch::Tensor& annotations,
      const torch::Tensor& tokens,
      const torch::Tensor& lengths,
      const torch::Tensor& mask = {},
      HardRead read = HardRead::argmax,
      const torch::Tensor& expectation_rows = {}) override;
  // The grid's keys and values for every layer's cross-attention; no words yet.
  DecoderState init_state(const torch::Tensor& annotations, const torch::Tensor& mask = {}) override;
  // One word per row: position state.steps, attending over the cached keys and values.
  DecoderStep step(
      const DecoderState& state,
      const torch::Tensor& prev_tokens,
      HardRead read = HardRead::argmax,
      const torch::Tensor& locations = {}) override;
  // The beams of an image share its grid's keys and values (DecoderState::grid_beams).
  DecoderState for_beams(const DecoderState& state, int64_t beams) override;
  // The layer whose cross-attention the alphas report from now on (decoder.maps_layer: 0-based,
  // negative counts from the last); the words do not depend on it. Throws std::invalid_argument
  // for a layer the decoder does not have.
  void set_maps_layer(int64_t layer);

  torch::nn::Embedding embedding{nullptr};
  torch::nn::Linear grid_proj{nullptr};
  torch::nn::ModuleList layers;
  torch::Tensor out_weight, out_bias;  // out_weight undefined when tied

 private:
  // x_t for words [B, T] at positions first .. first + T - 1: [B, T, d].
  torch::Tensor embed(const torch::Tensor& words, int64_t first);
  // Every layer's cross-attention keys and values of annotations [B, L, D].
  void remember_grid(const torch::Tensor& annotations, DecoderState& state, PackedWeights& packed);
  // The layers over x [B, T, d] after state.steps cached positions; appends each layer's keys and
  // values to `state` (replacing the cache) and returns the output [B, T, d] and the maps layer's
  // cross-attention [B, N, T, L].
  std::pair<torch::Tensor, torch::Tensor> run_layers(
      torch::Tensor x, DecoderState& state, const torch::Tensor& mask, PackedWeights& packed);
  torch::Tensor logits(const torch::Tensor& x, PackedWeights& packed);
  // The packs this call's products use: kept between calls while parameter_versions() stays the
  // same; a fresh (unused) one where a gradient is needed. Not thread-safe.
  PackedWeights packs();

  DecoderOptions options_;
  PackedWeights packs_;
  std::vector<int64_t> packs_key_;  // parameter_versions() when packs_ was made
};
TORCH_MODULE(TransformerDecoder);

}  // namespace saccade
