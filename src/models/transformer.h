// The Transformer's attention (Vaswani et al. 2017), and the refiner built from it: layers of
// self-attention over the annotation grid, between the encoder and the decoder.
//
//   RefinerOptions options = refiner_options_from(config);      // encoder.refiner.*
//   GridRefiner refiner(options, /*dim=*/128, /*grid=*/std::array<int64_t, 2>{8, 8});
//   torch::Tensor refined = refiner->forward(annotations, {8, 8});  // [B, L, D] -> [B, L, D]
//   RefinedGrid out = refiner->refine(annotations, {8, 8});     // + every layer's maps [B, N, L, L]
//
// Shape legend: B batch, T queries, S keys, L = Hg * Wg grid locations, D model width (the
// annotation dim), N heads, K = D / N channels per head, F feed-forward width.
//
// Multi-head scaled dot-product attention (TransformerAttention), queries x [B, T, D], source
// s [B, S, D] (s = x for self-attention):
//   Q = x W_q^T + b_q, K = s W_k^T + b_k, V = s W_v^T + b_v     W_q, W_k, W_v: in_proj_weight [3D, D]
//   head n reads channels nK .. (n+1)K - 1 of each:
//     A_n = softmax(Q_n K_n^T / sqrt(K) + mask)  [T, S],   O_n = dropout(A_n) V_n
//   output = [O_1 .. O_N] W_o^T + b_o                           out_proj
// A refiner layer (post-norm, as torch.nn.TransformerEncoderLayer with batch_first and ReLU):
//   x = LayerNorm_1(x + dropout(SelfAttention(x)))
//   x = LayerNorm_2(x + dropout(W_2 dropout(relu(W_1 x + b_1)) + b_2))
// The refiner adds position to its input once, before the first layer: self-attention alone cannot
// tell one location from another. sinusoidal: the 2D encoding of models/grid_position.h (any grid);
// learned: a table [L, D] for a fixed grid, initialized N(0, 0.02^2).
//
// Parameter names are torch.nn.TransformerEncoder's (layers.<i>.self_attn.in_proj_weight,
// .self_attn.out_proj.*, .linear1.*, .linear2.*, .norm1.*, .norm2.*), so its weights load one to one.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/packed_linear.h"

namespace saccade {

class ArchitectureKeys;
class Config;

// x [..., K] W^T + b through `packed` (which takes rows [M, K]): torch's linear where a gradient
// is needed, the packed kernels in inference.
torch::Tensor linear(
    PackedWeights& packed,
    const torch::Tensor& x,
    const torch::Tensor& weight,
    const torch::Tensor& bias = {});

// What a multi-head attention returns.
struct HeadsOutput {
  torch::Tensor output;   // [B, T, D] after the output projection
  torch::Tensor weights;  // [B, N, T, S]: the heads' attention weights, rows sum to 1
};

// Multi-head scaled dot-product attention. Parameters in_proj_weight [3D, D], in_proj_bias [3D]
// (queries, keys, values stacked), out_proj.{weight [D, D], bias}: torch.nn.MultiheadAttention's.
// Every product goes through `packed` (linear above).
class TransformerAttentionImpl : public torch::nn::Module {
 public:
  // Throws std::invalid_argument unless heads divides dim.
  TransformerAttentionImpl(int64_t dim, int64_t heads, double dropout);

  // Queries, keys and values all from x [B, T, D]. mask: optional additive [T, T] (0 or -inf).
  HeadsOutput forward(const torch::Tensor& x, const torch::Tensor& mask = {}, PackedWeights packed = {});

  // The parts, for callers that keep keys and values between calls:
  // [B, T, D] -> [B, N, T, K] through rows part*D .. (part+1)*D - 1 of in_proj (0 queries,
  // 1 keys, 2 values).
  torch::Tensor project(const torch::Tensor& x, int64_t part, PackedWeights packed = {});
  // All three parts by one product: queries, keys, values, each [B, N, T, K].
  std::vector<torch::Tensor> project_all(const torch::Tensor& x, PackedWeights packed = {});
  // Attention of queries q [B, N, T, K] over keys given transposed, keys_t [B', N, K, S] (a cache
  // kept so is read as it lies, with no copy per step), and values v [B', N, S, K]; mask as above
  // ([T, S]). B' = B / R: R rows of queries (an image's beams) share each row of keys and values;
  // no gradient flows through shared ones. One query per row (T = 1, a decoding step) goes
  // through the CPU's expected-value kernel (kernels/attention_kernels.h). `images` (int64 [C],
  // optional): the rows of keys_t and v that the C images of q read, B = C R, in place of all B'.
  HeadsOutput attend(
      const torch::Tensor& q,
      const torch::Tensor& keys_t,
      const torch::Tensor& v,
      const torch::Tensor& mask = {},
      PackedWeights packed = {},
      const torch::Tensor& images = {});

  int64_t heads() const { return heads_; }

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};

 private:
  torch::Tensor split_heads(const torch::Tensor& x) const;  // [B, T, D] -> [B, N, T, K]

  int64_t dim_, heads_;
  double dropout_;
};
TORCH_MODULE(TransformerAttention);

// One post-norm self-attention layer (see the top of this file).
class RefinerLayerImpl : public torch::nn::Module {
 public:
  RefinerLayerImpl(int64_t dim, int64_t heads, int64_t ffn_dim, double dropout);
  // x [B, L, D] -> the layer's output [B, L, D] and its attention weights [B, N, L, L].
  HeadsOutput forward(const torch::Tensor& x, PackedWeights packed = {});

  TransformerAttention self_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
  torch::nn::Dropout dropout{nullptr};
};
TORCH_MODULE(RefinerLayer);

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
//   x = LayerNorm_2(x + dropout(CrossAttention(x, grid)))         queries from the words, keys and values
//   from the grid x = LayerNorm_3(x + dropout(W_2 dropout(relu(W_1 x + b_1)) + b_2))
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

// encoder.refiner.position: the position the refiner adds to its input.
enum class RefinerPosition { sinusoidal, learned };
std::string to_string(RefinerPosition position);
// "sinusoidal" | "learned"; throws std::invalid_argument naming the value otherwise.
RefinerPosition parse_refiner_position(const std::string& name);

struct RefinerOptions {
  // none (the annotations go to the decoder as the encoder made them) | transformer.
  std::string kind = "none";
  int64_t layers = 2;
  int64_t heads = 4;      // N; must divide the annotation dim D
  int64_t ffn_dim = 512;  // F
  double dropout =
      0.1;  // on the attention weights, the sublayers' outputs and the feed-forward's hidden layer
  RefinerPosition position = RefinerPosition::sinusoidal;

  bool enabled() const { return kind != "none"; }
};

// Reads encoder.refiner.{kind, layers, heads, ffn_dim, dropout, position}; a config without
// encoder.refiner (a run saved before it existed) has none. Throws ConfigError for a missing key
// or a bad value. Records the keys that shape the model in `architecture`, when given
// (models/architecture_keys.h).
RefinerOptions refiner_options_from(const Config& config, ArchitectureKeys* architecture = nullptr);

// Throws std::invalid_argument, one sentence naming the key and value per broken rule: kind none
// or transformer; layers, heads, ffn_dim >= 1; heads dividing `dim` (the annotation dim);
// dropout in [0, 1); sinusoidal with dim % 4 == 0; learned with a known grid ({0, 0} = unknown).
void validate(const RefinerOptions& options, int64_t dim, const std::array<int64_t, 2>& grid);

// A refined grid with what every layer attended.
struct RefinedGrid {
  torch::Tensor annotations;        // [B, L, D]
  std::vector<torch::Tensor> maps;  // per layer [B, N, L, L]: row l is where location l looked
};

// The refiner: position, then `layers` RefinerLayers. Parameters layers.<i>.* and, when learned,
// position [L, D].
class GridRefinerImpl : public torch::nn::Module {
 public:
  // Validates. `grid` is the encoder's fixed grid ({0, 0} when it follows the image size).
  GridRefinerImpl(const RefinerOptions& options, int64_t dim, const std::array<int64_t, 2>& grid);
  const RefinerOptions& options() const { return options_; }

  // annotations [B, L, D] on a grid [Hg, Wg] (Hg * Wg = L) -> refined [B, L, D].
  torch::Tensor forward(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid);
  // The same, keeping each layer's attention maps. Throws std::invalid_argument when the
  // annotations do not fit the grid, the width, or a learned table's grid.
  RefinedGrid refine(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid);

  torch::nn::ModuleList layers;
  torch::Tensor position;  // learned: [L, D]; undefined for sinusoidal

 private:
  RefinerOptions options_;
  int64_t dim_;
  std::array<int64_t, 2> grid_;
};
TORCH_MODULE(GridRefiner);

}  // namespace saccade
