// The Transformer's attention (Vaswani et al. 2017) and the pieces its layers share: the
// refiner's (models/grid_refiner.h) and the decoder's (models/transformer_decoder.h).
//
// Shape legend: B batch, T queries, S keys, D model width, N heads, K = D / N channels per head,
// F feed-forward width.
//
// Multi-head scaled dot-product attention (TransformerAttention), queries x [B, T, D], source
// s [B, S, D] (s = x for self-attention):
//   Q = x W_q^T + b_q, K = s W_k^T + b_k, V = s W_v^T + b_v     W_q, W_k, W_v: in_proj_weight [3D, D]
//   head n reads channels nK .. (n+1)K - 1 of each:
//     A_n = softmax(Q_n K_n^T / sqrt(K) + mask)  [T, S],   O_n = dropout(A_n) V_n
//   output = [O_1 .. O_N] W_o^T + b_o                           out_proj
// Every layer is post-norm, as torch.nn's with batch_first and ReLU, and ends in the same
// feed-forward sublayer (residual_feed_forward):
//   x = LayerNorm(x + dropout(W_2 dropout(relu(W_1 x + b_1)) + b_2))
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <cstdint>
#include <vector>

#include "kernels/packed_linear.h"

namespace saccade {

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

// The feed-forward sublayer with its residual and norm, the last sublayer of both layers:
// norm(x + dropout(W_2 dropout(relu(W_1 x + b_1)) + b_2)).
torch::Tensor residual_feed_forward(
    const torch::Tensor& x,
    torch::nn::Linear& linear1,
    torch::nn::Linear& linear2,
    torch::nn::LayerNorm& norm,
    torch::nn::Dropout& dropout,
    PackedWeights& packed);

}  // namespace saccade
