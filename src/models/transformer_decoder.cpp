// The Transformer decoder and its layer: one pass under the causal mask for training, cached steps
// for decoding (see transformer_decoder.h).
#include "models/transformer_decoder.h"

#include <torch/nn/init.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/grid_position.h"

namespace saccade {

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

TransformerDecoderImpl::TransformerDecoderImpl(const DecoderOptions& options) : options_(options) {
  validate(options);
  if (options.kind != DecoderKind::transformer)
    throw std::invalid_argument("TransformerDecoder needs decoder.kind=transformer");
  const int64_t d = options.transformer.model_dim;
  embedding = register_module("embedding", torch::nn::Embedding(options.vocab_size, d));
  // Scaled by sqrt(d) at the input, so the embeddings start at unit scale beside the encoding.
  torch::nn::init::normal_(embedding->weight, 0.0, 1.0 / std::sqrt(static_cast<double>(d)));
  grid_proj = register_module("grid_proj", torch::nn::Linear(options.annotation_dim, d));
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.transformer.layers; ++i) {
    layers->push_back(
        TransformerDecoderLayer(d, options.transformer.heads, options.transformer.ffn_dim, options.dropout));
  }
  if (!options.transformer.tied_embeddings) {
    out_weight = register_parameter("out_weight", torch::empty({options.vocab_size, d}));
    torch::nn::init::xavier_uniform_(out_weight);
  }
  out_bias = register_parameter("out_bias", torch::zeros({options.vocab_size}));
}

torch::Tensor TransformerDecoderImpl::embed(const torch::Tensor& words, int64_t first) {
  const int64_t d = options_.transformer.model_dim;
  const auto position = sinusoidal_encoding(first, words.size(1), d, embedding->weight.options());  // [T, d]
  const auto x = embedding(words) * std::sqrt(static_cast<double>(d)) + position;
  return torch::dropout(x, options_.dropout, is_training());
}

PackedWeights TransformerDecoderImpl::packs() {
  if (torch::GradMode::is_enabled()) return PackedWeights();
  auto key = parameter_versions(*this);
  if (key != packs_key_) {
    packs_ = PackedWeights();
    packs_key_ = std::move(key);
  }
  return packs_;
}

void TransformerDecoderImpl::remember_grid(
    const torch::Tensor& annotations, DecoderState& state, PackedWeights& packed) {
  if (annotations.dim() != 3 || annotations.size(2) != options_.annotation_dim) {
    throw std::invalid_argument(
        "The decoder expects annotations [B, L, " + std::to_string(options_.annotation_dim) + "], got " +
        c10::str(annotations.sizes()));
  }
  const auto grid = linear(packed, annotations, grid_proj->weight, grid_proj->bias);  // [B, L, d]
  for (const auto& layer : *layers) {
    auto& attention = *layer->as<TransformerDecoderLayerImpl>()->multihead_attn;
    state.grid_keys.push_back(
        attention.project(grid, 1, packed).transpose(-2, -1).contiguous());        // [B, N, K, L]
    state.grid_values.push_back(attention.project(grid, 2, packed).contiguous());  // [B, N, L, K]
  }
}

std::pair<torch::Tensor, torch::Tensor> TransformerDecoderImpl::run_layers(
    torch::Tensor x, DecoderState& state, const torch::Tensor& mask, PackedWeights& packed) {
  const int64_t maps_layer = options_.transformer.maps_layer < 0
                                 ? options_.transformer.layers + options_.transformer.maps_layer
                                 : options_.transformer.maps_layer;
  state.word_keys.resize(static_cast<size_t>(options_.transformer.layers));
  state.word_values.resize(static_cast<size_t>(options_.transformer.layers));
  torch::Tensor maps;
  for (size_t i = 0; i < layers->size(); ++i) {
    DecoderLayerOutput out = layers[i]->as<TransformerDecoderLayerImpl>()->forward(
        x, state.word_keys[i], state.word_values[i], state.grid_keys[i], state.grid_values[i], mask, packed,
        state.grid_images);
    x = out.x;
    state.word_keys[i] = out.keys_t;
    state.word_values[i] = out.values;
    if (static_cast<int64_t>(i) == maps_layer) maps = out.grid_weights;
  }
  return {x, maps};
}

torch::Tensor TransformerDecoderImpl::logits(const torch::Tensor& x, PackedWeights& packed) {
  return linear(packed, x, options_.transformer.tied_embeddings ? embedding->weight : out_weight, out_bias);
}

DecoderOutput TransformerDecoderImpl::forward(
    const torch::Tensor& annotations,
    const torch::Tensor& tokens,
    const torch::Tensor& lengths,
    const torch::Tensor& mask,
    HardRead,
    const torch::Tensor&) {
  checked_lengths(annotations, tokens, lengths);
  if (mask.defined()) throw std::invalid_argument("The Transformer decoder reads whole grids: no mask");
  const int64_t T = tokens.size(1);
  PackedWeights packed = packs();
  DecoderState state;
  remember_grid(annotations, state, packed);
  auto [x, maps] = run_layers(embed(tokens, 0), state, causal_mask(T, annotations.options()), packed);
  // Padding positions (t >= lengths[b]) are zeros, as the LSTM leaves them.
  const auto real = torch::arange(T, lengths.options().dtype(torch::kLong)).unsqueeze(0) <
                    lengths.to(torch::kLong).unsqueeze(1);  // [B, T]
  const auto keep = real.to(x.scalar_type()).to(x.device());
  DecoderOutput output;
  output.logits = logits(x, packed) * keep.unsqueeze(2);                  // [B, T, V]
  output.alphas = maps.transpose(1, 2) * keep.unsqueeze(2).unsqueeze(3);  // [B, T, N, L]
  return output;
}

DecoderState TransformerDecoderImpl::init_state(const torch::Tensor& annotations, const torch::Tensor& mask) {
  if (mask.defined()) throw std::invalid_argument("The Transformer decoder reads whole grids: no mask");
  DecoderState state;
  PackedWeights packed = packs();
  remember_grid(annotations, state, packed);
  return state;
}

DecoderStep TransformerDecoderImpl::step(
    const DecoderState& state, const torch::Tensor& prev_tokens, HardRead, const torch::Tensor&) {
  if (state.grid_keys.size() != layers->size()) {
    throw std::invalid_argument("step needs a state from this decoder's init_state");
  }
  const int64_t rows = state.grid_rows();
  if (prev_tokens.dim() != 1 || prev_tokens.size(0) != rows) {
    throw std::invalid_argument(
        "step expects previous tokens [" + std::to_string(rows) + "], got " + c10::str(prev_tokens.sizes()));
  }
  DecoderStep step;
  step.state = state;
  PackedWeights packed = packs();
  auto [x, maps] = run_layers(embed(prev_tokens.unsqueeze(1), state.steps), step.state, {}, packed);
  step.state.steps = state.steps + 1;
  step.logits = logits(x.squeeze(1), packed);  // [B, V]
  step.alpha = maps.squeeze(2);                // [B, N, L]
  return step;
}

DecoderState TransformerDecoderImpl::for_beams(const DecoderState& state, int64_t beams) {
  if (state.grid_keys.empty() || state.grid_images.defined())
    throw std::invalid_argument("for_beams needs a state from this decoder's init_state");
  const int64_t rows = state.grid_rows();
  const auto index =
      torch::arange(rows, state.grid_keys.front().options().dtype(torch::kLong)).repeat_interleave(beams);
  DecoderState expanded = state.reorder_beams(index);  // the words read so far, if any
  expanded.grid_beams = state.grid_beams * beams;
  return expanded;
}

void TransformerDecoderImpl::set_maps_layer(int64_t layer) {
  if (layer >= options_.transformer.layers || layer < -options_.transformer.layers) {
    throw std::invalid_argument(
        "layer " + std::to_string(layer) + " is not a layer of the " +
        std::to_string(options_.transformer.layers) + "-layer decoder (0 to " +
        std::to_string(options_.transformer.layers - 1) + ", or negative from the last)");
  }
  options_.transformer.maps_layer = layer;
}

}  // namespace saccade
