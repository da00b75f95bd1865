// Multi-head attention, the refiner's layers and the refiner (see transformer.h).
#include "models/transformer.h"

#include <torch/nn/functional/dropout.h>
#include <torch/nn/init.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "base/enum_names.h"
#include "config/config.h"
#include "kernels/attention_kernels.h"
#include "models/architecture_keys.h"
#include "models/grid_position.h"

namespace saccade {
namespace F = torch::nn::functional;

TransformerAttentionImpl::TransformerAttentionImpl(int64_t dim, int64_t heads, double dropout)
    : dim_(dim), heads_(heads), dropout_(dropout) {
  if (dim <= 0 || heads <= 0 || dim % heads != 0) {
    throw std::invalid_argument(
        std::to_string(heads) + " heads do not divide the width " + std::to_string(dim));
  }
  // torch.nn.MultiheadAttention's initialization: Xavier-uniform projections, zero biases.
  in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * dim, dim}));
  in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * dim}));
  torch::nn::init::xavier_uniform_(in_proj_weight);
  out_proj = register_module("out_proj", torch::nn::Linear(dim, dim));
  torch::nn::init::zeros_(out_proj->bias);
}

torch::Tensor linear(
    PackedWeights& packed, const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  auto sizes = x.sizes().vec();
  sizes.back() = weight.size(0);
  return packed.linear(x.flatten(0, -2), weight, bias).view(sizes);
}

torch::Tensor TransformerAttentionImpl::split_heads(const torch::Tensor& x) const {
  return x.reshape({x.size(0), x.size(1), heads_, dim_ / heads_}).transpose(1, 2);
}

torch::Tensor TransformerAttentionImpl::project(const torch::Tensor& x, int64_t part, PackedWeights packed) {
  return split_heads(linear(
      packed, x, in_proj_weight.narrow(0, part * dim_, dim_), in_proj_bias.narrow(0, part * dim_, dim_)));
}

HeadsOutput TransformerAttentionImpl::attend(
    const torch::Tensor& q,
    const torch::Tensor& keys_t,
    const torch::Tensor& v,
    const torch::Tensor& mask,
    PackedWeights packed,
    const torch::Tensor& images) {
  const double scale = 1.0 / std::sqrt(static_cast<double>(dim_ / heads_));
  const int64_t count = images.defined() ? images.size(0) : keys_t.size(0);
  const int64_t rows = q.size(0), beams = count > 0 ? rows / count : 0;
  if (count == 0 || beams * count != rows || v.size(0) != keys_t.size(0)) {
    throw std::invalid_argument(
        "attention of queries " + c10::str(q.sizes()) + " over keys " + c10::str(keys_t.sizes()) +
        ": not a whole number of query rows per row of keys and values " + c10::str(v.sizes()));
  }
  const bool gradient =
      torch::GradMode::is_enabled() && (q.requires_grad() || keys_t.requires_grad() || v.requires_grad());
  if (q.size(2) == 1 && !mask.defined() && !(is_training() && dropout_ > 0.0) && (beams == 1 || !gradient)) {
    // One query per row and head, as a decoding step has: both products are weighted sums of
    // rows, by the expected-value kernel, which reads an image's keys and values once for all
    // its beams. matmul ran them as one tiny GEMM per row and head (40 per layer for five beams).
    const auto weights =
        torch::softmax(expected_value(q.squeeze(2) * scale, keys_t, beams, images), -1);  // [B, N, S]
    const auto read = expected_value(weights, v, beams, images).view({rows, 1, dim_});    // [B, 1, D]
    return {linear(packed, read, out_proj->weight, out_proj->bias), weights.unsqueeze(2)};
  }
  const auto per_row = [&](const torch::Tensor& x) {
    const auto read = images.defined() ? x.index_select(0, images.to(x.device())) : x;
    return beams > 1 ? read.repeat_interleave(beams, 0) : read;
  };
  torch::Tensor scores = torch::matmul(q * scale, per_row(keys_t));  // [B, N, T, S]
  if (mask.defined()) scores = scores + mask;
  const torch::Tensor weights = torch::softmax(scores, -1);
  const torch::Tensor read = torch::matmul(
      F::dropout(weights, F::DropoutFuncOptions().p(dropout_).training(is_training())), per_row(v));
  const torch::Tensor merged = read.transpose(1, 2).reshape({q.size(0), q.size(2), dim_});  // [B, T, D]
  return {linear(packed, merged, out_proj->weight, out_proj->bias), weights};
}

std::vector<torch::Tensor> TransformerAttentionImpl::project_all(
    const torch::Tensor& x, PackedWeights packed) {
  std::vector<torch::Tensor> parts;
  for (const auto& part : linear(packed, x, in_proj_weight, in_proj_bias).chunk(3, -1))  // one product
    parts.push_back(split_heads(part));
  return parts;
}

HeadsOutput TransformerAttentionImpl::forward(
    const torch::Tensor& x, const torch::Tensor& mask, PackedWeights packed) {
  const auto qkv = project_all(x, packed);
  return attend(qkv[0], qkv[1].transpose(-2, -1), qkv[2], mask, packed);
}

namespace {

// The feed-forward sublayer with its residual and norm: norm(x + dropout(W_2 dropout(relu(W_1 x + b_1)) +
// b_2)).
torch::Tensor residual_feed_forward(
    const torch::Tensor& x,
    torch::nn::Linear& linear1,
    torch::nn::Linear& linear2,
    torch::nn::LayerNorm& norm,
    torch::nn::Dropout& dropout,
    PackedWeights& packed) {
  const auto hidden = dropout(torch::relu(linear(packed, x, linear1->weight, linear1->bias)));
  return norm(x + dropout(linear(packed, hidden, linear2->weight, linear2->bias)));
}

}  // namespace

RefinerLayerImpl::RefinerLayerImpl(int64_t dim, int64_t heads, int64_t ffn_dim, double dropout_p)
    : self_attn(register_module("self_attn", TransformerAttention(dim, heads, dropout_p))),
      linear1(register_module("linear1", torch::nn::Linear(dim, ffn_dim))),
      linear2(register_module("linear2", torch::nn::Linear(ffn_dim, dim))),
      norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      dropout(register_module("dropout", torch::nn::Dropout(dropout_p))) {}

HeadsOutput RefinerLayerImpl::forward(const torch::Tensor& x, PackedWeights packed) {
  HeadsOutput attended = self_attn->forward(x, {}, packed);
  const torch::Tensor mixed = norm1(x + dropout(attended.output));
  return {residual_feed_forward(mixed, linear1, linear2, norm2, dropout, packed), attended.weights};
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(
    int64_t dim, int64_t heads, int64_t ffn_dim, double dropout_p)
    : self_attn(register_module("self_attn", TransformerAttention(dim, heads, dropout_p))),
      multihead_attn(register_module("multihead_attn", TransformerAttention(dim, heads, dropout_p))),
      linear1(register_module("linear1", torch::nn::Linear(dim, ffn_dim))),
      linear2(register_module("linear2", torch::nn::Linear(ffn_dim, dim))),
      norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      norm3(register_module("norm3", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      dropout(register_module("dropout", torch::nn::Dropout(dropout_p))) {}

DecoderLayerOutput TransformerDecoderLayerImpl::forward(
    const torch::Tensor& x,
    const torch::Tensor& past_keys_t,
    const torch::Tensor& past_values,
    const torch::Tensor& grid_keys_t,
    const torch::Tensor& grid_values,
    const torch::Tensor& mask,
    PackedWeights packed,
    const torch::Tensor& grid_images) {
  DecoderLayerOutput out;
  const auto qkv = self_attn->project_all(x, packed);
  out.keys_t = qkv[1].transpose(-2, -1);
  out.values = qkv[2];
  if (past_keys_t.defined()) {
    out.keys_t = torch::cat({past_keys_t, out.keys_t}, 3);
    out.values = torch::cat({past_values, out.values}, 2);
  }
  const HeadsOutput own = self_attn->attend(qkv[0], out.keys_t, out.values, mask, packed);
  const torch::Tensor words = norm1(x + dropout(own.output));
  const HeadsOutput read = multihead_attn->attend(
      multihead_attn->project(words, 0, packed), grid_keys_t, grid_values, {}, packed, grid_images);
  const torch::Tensor grounded = norm2(words + dropout(read.output));
  out.x = residual_feed_forward(grounded, linear1, linear2, norm3, dropout, packed);
  out.grid_weights = read.weights;
  return out;
}

torch::Tensor causal_mask(int64_t count, const torch::TensorOptions& options) {
  return torch::full({count, count}, -std::numeric_limits<double>::infinity(), options).triu(1);
}

const EnumNames<RefinerPosition> kRefinerPositionNames(
    "refiner position", {{RefinerPosition::sinusoidal, "sinusoidal"}, {RefinerPosition::learned, "learned"}});

std::string to_string(RefinerPosition position) {
  return kRefinerPositionNames.name(position);
}

RefinerPosition parse_refiner_position(const std::string& name) {
  return kRefinerPositionNames.parse(name);
}

RefinerOptions refiner_options_from(const Config& config, ArchitectureKeys* architecture) {
  const auto shaping = [architecture](const char* key) {
    return ArchitectureKeys::record(architecture, key);
  };
  RefinerOptions options;
  if (!config.has("encoder.refiner")) return options;
  options.kind = config.get<std::string>(shaping("encoder.refiner.kind"));
  // Without a refiner its other keys shape nothing.
  const auto refining = [&](const char* key) { return options.enabled() ? shaping(key) : key; };
  options.layers = config.get<int64_t>(refining("encoder.refiner.layers"));
  options.heads = config.get<int64_t>(refining("encoder.refiner.heads"));
  options.ffn_dim = config.get<int64_t>(refining("encoder.refiner.ffn_dim"));
  options.dropout = config.get<double>("encoder.refiner.dropout");
  options.position = config.get_parsed(refining("encoder.refiner.position"), parse_refiner_position);
  return options;
}

void validate(const RefinerOptions& options, int64_t dim, const std::array<int64_t, 2>& grid) {
  const auto fail = [](const std::string& message) { throw std::invalid_argument(message); };
  if (options.kind != "none" && options.kind != "transformer") {
    fail("encoder.refiner.kind must be none or transformer, got '" + options.kind + "'");
  }
  if (!options.enabled()) return;
  if (options.layers < 1) fail("encoder.refiner.layers must be >= 1, got " + std::to_string(options.layers));
  if (options.ffn_dim < 1)
    fail("encoder.refiner.ffn_dim must be >= 1, got " + std::to_string(options.ffn_dim));
  if (options.heads < 1 || dim % options.heads != 0) {
    fail(
        "encoder.refiner.heads=" + std::to_string(options.heads) + " does not divide the annotation width " +
        std::to_string(dim));
  }
  if (!(options.dropout >= 0.0 && options.dropout < 1.0)) {
    fail("encoder.refiner.dropout must be in [0, 1), got " + std::to_string(options.dropout));
  }
  if (options.position == RefinerPosition::sinusoidal && dim % 4 != 0) {
    fail(
        "encoder.refiner.position=sinusoidal needs an annotation width divisible by 4, got " +
        std::to_string(dim) + " (use learned)");
  }
  if (options.position == RefinerPosition::learned && grid[0] * grid[1] <= 0) {
    fail("encoder.refiner.position=learned needs a fixed grid: set encoder.grid");
  }
}

GridRefinerImpl::GridRefinerImpl(
    const RefinerOptions& options, int64_t dim, const std::array<int64_t, 2>& grid)
    : options_(options), dim_(dim), grid_(grid) {
  validate(options, dim, grid);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.layers; ++i) {
    layers->push_back(RefinerLayer(dim, options.heads, options.ffn_dim, options.dropout));
  }
  if (options.position == RefinerPosition::learned) {
    position = register_parameter("position", torch::randn({grid[0] * grid[1], dim}) * 0.02);
  }
}

RefinedGrid GridRefinerImpl::refine(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid) {
  const auto sizes = [](const torch::IntArrayRef shape) {
    std::string text;
    for (const int64_t size : shape) text += (text.empty() ? "" : ", ") + std::to_string(size);
    return "[" + text + "]";
  };
  const int64_t locations = grid[0] * grid[1];
  if (annotations.dim() != 3 || annotations.size(1) != locations || annotations.size(2) != dim_) {
    throw std::invalid_argument(
        "The refiner takes annotations [B, " + std::to_string(locations) + ", " + std::to_string(dim_) +
        "] on its " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " grid, got " +
        sizes(annotations.sizes()));
  }
  if (position.defined() && grid != grid_) {
    throw std::invalid_argument(
        "The refiner's learned position table covers a " + std::to_string(grid_[0]) + " x " +
        std::to_string(grid_[1]) + " grid, not " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]));
  }
  const torch::Tensor added =
      position.defined()
          ? position
          : sinusoidal_encoding_2d(dim_, grid[0], grid[1], annotations.options()).flatten(1).t();
  RefinedGrid refined{annotations + added, {}};
  for (const auto& layer : *layers) {
    HeadsOutput out = layer->as<RefinerLayerImpl>()->forward(refined.annotations);
    refined.annotations = out.output;
    refined.maps.push_back(out.weights);
  }
  return refined;
}

torch::Tensor GridRefinerImpl::forward(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid) {
  return refine(annotations, grid).annotations;
}

}  // namespace saccade
