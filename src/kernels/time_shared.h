// Tensors shared by every step of a recurrence, with gradients gathered once instead of per step.
//
// Backpropagation through time gives a shared tensor one gradient contribution per step, and
// plain autograd materializes and adds each one: T thin GEMMs of [K, M] for a weight, T full-size
// additions for the attention keys. These two classes keep the per-step work to what each step
// must do and hand autograd one gradient at the end. Values and first-order gradients equal plain
// autograd's; higher-order gradients are not supported.
//
//   TimeSharedWeight w(weight);          // weight [K, M], may require grad
//   for (t ...) y_t = w.multiply(x_t);   // x_t [n_t, K] -> [n_t, M]; n_t may shrink
//
//   TimeSharedTensor keys(k);            // k [B, ...]; steps read prefixes k[:n_t]
//   ... a custom step node depends on keys.token() and adds its gradient for k[:n] into
//   keys.grad_rows(n) during backward.
//
// Both work the same way: an empty `token` tensor carries the autograd edge to the shared tensor,
// and every step's node depends on it. The engine runs the token's node only after all its
// consumers, so by then every step's contribution is known.
#pragma once

#include <torch/types.h>

#include <memory>
#include <vector>

#include "kernels/packed_linear.h"

namespace saccade {

// x_t W with dW = sum_t x_t^T g_t computed as one GEMM, X^T G, after the last step's backward.
// A product may use a block of W's rows (an LSTM's input weight multiplies the word embedding in
// one product and the context in another); each block's gradient is one GEMM, all written into
// one gradient for W.
class TimeSharedWeight {
 public:
  explicit TimeSharedWeight(const torch::Tensor& weight);

  // x [n, k] -> x W[row : row + k] [n, M], differentiable in x and (deferred) in W. Where the
  // CPU kernels do not take x and W (takes_cpu_kernels), a plain product with plain autograd.
  torch::Tensor multiply(const torch::Tensor& x, int64_t row = 0);

  // What the backward nodes share: W, the inputs x_t and, during backward, the g_t.
  struct Steps {
    torch::Tensor weight;               // [K, M] detached
    std::vector<torch::Tensor> inputs;  // x_t [n_t, k_t], detached
    std::vector<int64_t> rows;          // the first row of W that x_t multiplies
    std::vector<torch::Tensor> grads;   // g_t [n_t, M]; undefined until step t's backward ran
    PackedWeights packed;               // W's blocks packed for the products of many rows
  };

 private:
  std::shared_ptr<Steps> steps_;
  torch::Tensor source_;  // W as given, with its history
  torch::Tensor token_;   // [0]
};

// A tensor whose per-step gradients are accumulated in place into one buffer, passed to autograd
// once. For step nodes written by hand (see the additive attention scores).
class TimeSharedTensor {
 public:
  explicit TimeSharedTensor(const torch::Tensor& value);

  // The tensor, detached: steps read it without recording autograd history.
  const torch::Tensor& value() const { return state_->value; }
  // The tensor as given, with its history: what steps read where the CPU kernels do not run.
  const torch::Tensor& source() const { return source_; }
  // [0]; requires grad when the value does. A step node that uses value() takes an edge to it.
  const torch::Tensor& token() const { return token_; }
  // The gradient of value()[:n], for a step's backward to add into (zeros when first used).
  torch::Tensor grad_rows(int64_t n);

  struct State {
    torch::Tensor value;  // detached
    torch::Tensor grad;   // the accumulated gradient; undefined until a step adds to it
  };

 private:
  std::shared_ptr<State> state_;
  torch::Tensor source_;
  torch::Tensor token_;  // [0]
};

}  // namespace saccade
