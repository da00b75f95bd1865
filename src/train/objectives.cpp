// Soft-attention objective: masked cross-entropy + doubly stochastic regularization.
#include "train/objectives.h"

#include <torch/nn/functional/loss.h>

#include <stdexcept>

namespace saccade {

XentReduction parse_xent_reduction(const std::string& name) {
  if (name == "per_caption") return XentReduction::per_caption;
  if (name == "per_token") return XentReduction::per_token;
  throw std::invalid_argument("train.xent_reduction must be per_caption or per_token, got '" + name + "'");
}

std::string to_string(XentReduction reduction) {
  return reduction == XentReduction::per_caption ? "per_caption" : "per_token";
}

torch::Tensor step_mask(const torch::Tensor& lengths, int64_t steps) {
  const auto positions = torch::arange(steps, lengths.options()).unsqueeze(0);  // [1, T]
  return (positions < lengths.unsqueeze(1)).to(torch::kFloat);                  // [B, T]
}

SoftAttentionLoss soft_attention_loss(
    const torch::Tensor& logits,
    const torch::Tensor& targets,
    const torch::Tensor& lengths,
    const torch::Tensor& alphas,
    double alpha_reg_weight,
    XentReduction reduction) {
  TORCH_CHECK(logits.dim() == 3, "logits must be [B, T, V]");
  const int64_t batch = logits.size(0);
  const int64_t steps = logits.size(1);
  const auto mask = step_mask(lengths, steps).to(logits.dtype());  // [B, T]

  // Padding targets may hold any id; they are masked out after the per-element loss.
  const auto nll = torch::nn::functional::cross_entropy(
                       logits.reshape({batch * steps, -1}), targets.reshape({batch * steps}),
                       torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
                       .view({batch, steps});  // [B, T]
  const auto masked = nll * mask;              // [B, T]

  SoftAttentionLoss loss;
  loss.tokens = lengths.sum().item<int64_t>();
  if (reduction == XentReduction::per_caption) {
    loss.xent = masked.sum() / static_cast<double>(batch);
  } else {
    loss.xent = masked.sum() / static_cast<double>(std::max<int64_t>(1, loss.tokens));
  }

  if (alpha_reg_weight > 0) {
    const auto per_step = alphas.dim() == 4 ? alphas.mean(2) : alphas;  // [B, T, L]
    const auto attended = (per_step * mask.unsqueeze(2)).sum(1);        // [B, L] sum_t alpha_ti
    const auto shortfall = (1.0 - attended).pow(2).sum(1);              // [B]
    loss.alpha_reg = alpha_reg_weight * shortfall.mean();
  } else {
    loss.alpha_reg = torch::zeros({}, logits.options());
  }
  loss.total = loss.xent + loss.alpha_reg;
  return loss;
}

}  // namespace saccade
