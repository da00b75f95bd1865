// The per-word cross-entropy of the training objective, -log softmax(logits)[target], as one
// autograd node; decoding's log-softmax of each step's words from the same row pass, and its
// greedy choice of a word.
//
//   torch::Tensor nll = token_cross_entropy(logits, targets);   // [N, V], [N] -> [N]
//   torch::Tensor log_probs = log_softmax_rows(step_logits);    // [B, V] -> [B, V]
//   torch::Tensor words = argmax_rows(log_probs);               // [B, V] -> [B] (int64)
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

// log_softmax(logits, 1) of float32 logits [N, V] on the CPU, as decoding takes each step's words:
// a row's maximum and log-sum-exp by the pass above, then (x - max) - log-sum while the row is in
// cache: [32, 10000] in 65 us on a two-core Xeon, where LibTorch's log_softmax took 250 us. Within float
// rounding of torch::log_softmax (the vector exponential); -inf logits give -inf. Other tensors, and a CPU
// without the kernels, take torch::log_softmax.
torch::Tensor log_softmax_rows(const torch::Tensor& logits);
torch::Tensor log_softmax_rows(KernelIsa isa, const torch::Tensor& logits);

// The position of each row's largest value in float32 scores [N, V] on the CPU, as torch::max(1)
// gives it (the first of equal values; the first NaN before any number), in one vector pass:
// greedy search's choice of a word. LibTorch's max took ~130 us for [32, 10000] in decoding.
// Other tensors, and a CPU without the kernels, take torch::max.
torch::Tensor argmax_rows(const torch::Tensor& scores);
torch::Tensor argmax_rows(KernelIsa isa, const torch::Tensor& scores);

}  // namespace saccade
