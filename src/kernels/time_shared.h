// Tensors shared by every step of a recurrence, with gradients gathered once instead of per step.
//
// Backpropagation through time gives a shared tensor one gradient contribution per step, and
// plain autograd materializes and adds each one: T thin GEMMs of [K, M] for a weight, T full-size
// passes for the attention keys. These two classes keep the per-step work to what each step
// must do and hand autograd one gradient at the end. Values and first-order gradients equal plain
// autograd's; higher-order gradients are not supported.
//
//   TimeSharedWeight w(weight);          // weight [K, M], may require grad
//   for (t ...) y_t = w.multiply(x_t);   // x_t [n_t, K] -> [n_t, M]; n_t may shrink
//
//   TimeSharedTensor keys(k);            // k [B, ...]; steps read prefixes k[:n_t]
//   ... a custom step node depends on keys.token() and, during backward, records what k's
//   gradient needs from its step in keys.gathered<G>(); the token's node asks G for the gradient.
//
// Both work the same way: an empty `token` tensor carries the autograd edge to the shared tensor,
// and every step's node depends on it. The engine runs the token's node only after all its
// consumers, so by then every step's contribution is known.
#pragma once

#include <torch/types.h>

#include <memory>
#include <utility>
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
  // Blocks of rows that different products use must not overlap, unless they are the same block.
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

// A tensor whose per-step gradients are gathered and turned into one gradient when its token's
// node runs, after every step's backward, and passed to autograd once. For step nodes written by
// hand (see the additive attention scores).
class TimeSharedTensor {
 public:
  explicit TimeSharedTensor(const torch::Tensor& value);

  // The tensor, detached: steps read it without recording autograd history.
  const torch::Tensor& value() const { return state_->value; }
  // The tensor as given, with its history: what steps read where the CPU kernels do not run.
  const torch::Tensor& source() const { return source_; }
  // [0]; requires grad when the value does. A step node that uses value() takes an edge to it.
  const torch::Tensor& token() const { return token_; }

  // What the steps' backward passes gather (per step, what the tensor's gradient needs), and the
  // gradient it makes of them, all steps in one pass over the tensor rather than one each.
  class Gathered {
   public:
    virtual ~Gathered() = default;
    // The gradient of value(), [value's shape].
    virtual torch::Tensor gradient() = 0;
  };
  // The steps' Gathered of type G, made from `args` by the first step that asks; the token's node
  // takes its gradient once and drops it, so the next backward pass starts anew.
  template <typename G, typename... Args>
  G& gathered(Args&&... args) {
    if (!state_->gathered) state_->gathered = std::make_shared<G>(std::forward<Args>(args)...);
    return static_cast<G&>(*state_->gathered);
  }

  struct State {
    torch::Tensor value;                 // detached
    std::shared_ptr<Gathered> gathered;  // null until a step's backward gathers
  };

 private:
  std::shared_ptr<State> state_;
  torch::Tensor source_;
  torch::Tensor token_;  // [0]
};

}  // namespace saccade
