// Fused CPU kernels for the two [B, L, *] passes of an attention step, each one autograd node.
//
//   TimeSharedTensor keys(k);                            // k [B, L, A], read by every step
//   torch::Tensor e = additive_scores(keys, q, w);       // q [n, A], w [A] -> e [n, L]
//   torch::Tensor z = expected_value(alpha, values);     // [B, N, L], [B, N, L, Dv] -> [B, N, Dv]
//   additive_scores(keys, q, w, 5);                      // q [5 B, A]: five beams per image
//
// Shapes: B images, n <= B the rows a step reads (a prefix: the decoder's active batch; or the
// images an index names, those a search still decodes), L locations, A attention dim, N heads, Dv
// value dim. Both take float or double on the CPU; the loops are written once over vector lanes
// (vector_lanes.h) and compiled for AVX2 and AVX-512, the best the CPU runs chosen at run time (on
// CPUs with neither, and for every other tensor, the plain LibTorch ops). Images are split over
// LibTorch's threads.
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
//
// `images` (int64 [n / beams], optional) names the row of keys each image reads, in place of the
// prefix: a search whose finished images leave it reads the rest's keys where they lie rather
// than copying them (no gradient then).
torch::Tensor additive_scores(
    const TimeSharedTensor& keys,
    const torch::Tensor& q,
    const torch::Tensor& w,
    int64_t beams = 1,
    const torch::Tensor& images = {});
// The same by a chosen kernel (tests run each one the CPU supports; none = the plain ops); `isa`
// must be one the CPU runs.
torch::Tensor additive_scores(
    KernelIsa isa,
    const TimeSharedTensor& keys,
    const torch::Tensor& q,
    const torch::Tensor& w,
    int64_t beams = 1,
    const torch::Tensor& images = {});

// z[r, h] = sum_l alpha[r, h, l] values[r / beams, h, l, :] (the soft context, eq. 13): alpha
// [B R, N, L] with R = beams rows per image of values [B, N, L, Dv]. ATen's bmm runs this as one
// single-row GEMM per image, one after another; this reads each image's values once per pass for
// all its rows, with (image, head, block of columns) split over the threads. Differentiable in
// both inputs when beams = 1 and no `images` are given. `images` (int64 [C], optional): the rows
// of values the C images of alpha's C R rows read, in place of all B of them in order.
torch::Tensor expected_value(
    const torch::Tensor& alpha,
    const torch::Tensor& values,
    int64_t beams = 1,
    const torch::Tensor& images = {});
torch::Tensor expected_value(
    KernelIsa isa,
    const torch::Tensor& alpha,
    const torch::Tensor& values,
    int64_t beams = 1,
    const torch::Tensor& images = {});

// Whether the kernels above read `memory` (keys or values [B, ...]) where a search decodes: on
// the CPU with the kernels and no gradient. Images leaving the search then read theirs through an
// index, in place; elsewhere the plain ops would gather the rows at every call, so they are
// copied once.
bool kernels_read_in_place(const torch::Tensor& memory);

}  // namespace saccade
