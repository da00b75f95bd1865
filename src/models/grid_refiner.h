// The refiner: layers of self-attention over the annotation grid, between the encoder and the
// decoder, built from the Transformer's attention (models/transformer.h).
//
//   RefinerOptions options = refiner_options_from(config);      // encoder.refiner.*
//   GridRefiner refiner(options, /*dim=*/128, /*grid=*/std::array<int64_t, 2>{8, 8});
//   torch::Tensor refined = refiner->forward(annotations, {8, 8});  // [B, L, D] -> [B, L, D]
//   RefinedGrid out = refiner->refine(annotations, {8, 8});     // + every layer's maps [B, N, L, L]
//
// Shape legend: B batch, L = Hg * Wg grid locations, D model width (the annotation dim), N heads,
// F feed-forward width.
//
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

#include "models/transformer.h"

namespace saccade {

class ArchitectureKeys;
class Config;

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
