// The per-word cross-entropy of the training objective, -log softmax(logits)[target], as one
// autograd node.
//
//   torch::Tensor nll = token_cross_entropy(logits, targets);   // [N, V], [N] -> [N]
//
// torch::nn::functional::cross_entropy writes the log-softmax [N, V], a zero-filled [N, V] for
// the NLL's gradient, and reads both back in backward: at the peers' size (N = 640 words,
// V = 10000) each is a 25.6 MB pass. Here forward reads each row twice while it is in cache (its
// maximum, then its sum of exponentials) and keeps only the row's log-sum-exp; backward writes
// g (softmax - one-hot) in one pass. Values and gradients equal cross_entropy's within float
// rounding (the exponential is a polynomial, relative error < 2.5e-7; vector_lanes.h), on AVX2
// or AVX-512 as the CPU runs; every other tensor (CUDA, double, CPU autocast) and a CPU with
// neither take cross_entropy itself. A target outside [0, V) is refused as cross_entropy refuses it.
#pragma once

#include <torch/types.h>

#include "kernels/kernel_isa.h"

namespace saccade {

torch::Tensor token_cross_entropy(const torch::Tensor& logits, const torch::Tensor& targets);
// The same by a chosen kernel (tests run each one the CPU supports; none = cross_entropy).
torch::Tensor token_cross_entropy(KernelIsa isa, const torch::Tensor& logits, const torch::Tensor& targets);

}  // namespace saccade
