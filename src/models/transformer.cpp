// Multi-head attention and the feed-forward sublayer both layers share (see transformer.h).
#include "models/transformer.h"

#include <torch/nn/functional/dropout.h>
#include <torch/nn/init.h>

#include <cmath>
#include <stdexcept>

#include "kernels/attention_kernels.h"

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

}  // namespace saccade
