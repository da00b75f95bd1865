// Training objectives of Show, Attend and Tell.
//
// Soft attention (paper Sec. 4.2.1, eq. 14): the caption's negative log-likelihood plus the
// doubly stochastic regularization
//     lambda * sum_i (1 - sum_t alpha_ti)^2
// which pushes the model to attend to every location over the course of the caption.
// Shapes: B batch, T steps, V vocab, L locations (multihead alphas [B, T, heads, L] are
// averaged over heads first).
#pragma once

#include <torch/types.h>

#include <string>

namespace saccade {

// How the per-word negative log-likelihoods become one number.
enum class XentReduction {
  per_caption,  // sum over a caption's words, mean over the batch (the authors' code)
  per_token,    // mean over all real words in the batch (sgrvinod's tutorial)
};

XentReduction parse_xent_reduction(const std::string& name);
std::string to_string(XentReduction reduction);

struct SoftAttentionLoss {
  torch::Tensor total;      // [] xent + alpha_reg, what is minimized
  torch::Tensor xent;       // [] cross-entropy over real tokens
  torch::Tensor alpha_reg;  // [] lambda * mean_b sum_i (1 - sum_t alpha_bti)^2
  int64_t tokens = 0;       // real (non-padding) target tokens in the batch
};

// logits  [B, T, V] scores for the word at each step
// targets [B, T]    int64 word ids; positions t >= lengths[b] are padding and never count
// lengths [B]       int64 number of real target steps per caption (including <end>)
// alphas  [B, T, L] or [B, T, heads, L] attention weights per step; padded steps are ignored
// alpha_reg_weight  lambda; 0 disables the regularizer
SoftAttentionLoss soft_attention_loss(
    const torch::Tensor& logits,
    const torch::Tensor& targets,
    const torch::Tensor& lengths,
    const torch::Tensor& alphas,
    double alpha_reg_weight,
    XentReduction reduction);

// [B, T] float mask, 1 where t < lengths[b].
torch::Tensor step_mask(const torch::Tensor& lengths, int64_t steps);

}  // namespace saccade
