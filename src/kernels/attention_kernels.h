// Fused CPU kernels for the two [B, L, *] passes of an attention step, each one autograd node.
//
//   TimeSharedTensor keys(k);                            // k [B, L, A], read by every step
//   torch::Tensor e = additive_scores(keys, q, w);       // q [n, A], w [A] -> e [n, L]
//   torch::Tensor z = expected_value(alpha, values);     // [B, N, L], [B, N, L, Dv] -> [B, N, Dv]
//   additive_scores(keys, q, w, 5);                      // q [5 B, A]: five beams per image
//
// Shapes: B images, n <= B the rows a step reads (a prefix: the decoder's active batch), L
// locations, A attention dim, N heads, Dv value dim. Both take float or double on the CPU; the
// loops are written once over vector lanes (vector_lanes.h) and compiled for AVX2 and AVX-512,
// the best the CPU runs chosen at run time (on CPUs with neither, and for every other tensor, the
// plain LibTorch ops). Images are split over LibTorch's threads.
#pragma once

#include <torch/types.h>

#include "kernels/kernel_isa.h"
#include "kernels/time_shared.h"

namespace saccade {

// e[r, l] = sum_a w[a] tanh(keys[r / beams, l, a] + q[r, a]) for r < n (the paper's f_att, eq. 4):
// with beams = 1 each row reads its own image's keys (a prefix keys[:n]); with beams = R, rows
// r R .. r R + R - 1 are the beams of image r, whose keys are read once for all of them.
// Plain autograd would keep tanh's output for every step and make five passes over [n, L, A] in
// backward; here forward makes one pass and keeps nothing, a step's backward one more for the
// query's gradient, and the keys' gradient of every step is made in one last pass when the
// TimeSharedTensor's token is reached (beams = 1 only). In float, tanh is a rational minimax
// approximation (|error| < 4e-7) that vectorizes; doubles use std::tanh.
torch::Tensor additive_scores(
    const TimeSharedTensor& keys, const torch::Tensor& q, const torch::Tensor& w, int64_t beams = 1);
// The same by a chosen kernel (tests run each one the CPU supports; none = the plain ops); `isa`
// must be one the CPU runs.
torch::Tensor additive_scores(
    KernelIsa isa,
    const TimeSharedTensor& keys,
    const torch::Tensor& q,
    const torch::Tensor& w,
    int64_t beams = 1);

// z[r, h] = sum_l alpha[r, h, l] values[r / beams, h, l, :] (the soft context, eq. 13): alpha
// [B R, N, L] with R = beams rows per image of values [B, N, L, Dv]. ATen's bmm runs this as one
// single-row GEMM per image, one after another; this reads each image's values once per pass for
// all its rows, with (image, head, block of columns) split over the threads. Differentiable in
// both inputs when beams = 1.
torch::Tensor expected_value(const torch::Tensor& alpha, const torch::Tensor& values, int64_t beams = 1);
torch::Tensor expected_value(
    KernelIsa isa, const torch::Tensor& alpha, const torch::Tensor& values, int64_t beams = 1);

}  // namespace saccade
