// The LSTM cell's nonlinear part (paper eq. 2-3) as one autograd node.
//
//   auto [h, c_next] = lstm_cell(gates, c);   // gates [n, 4H] (i, f, g, o), c [n, H] -> [n, H] each
//
// c' = sigmoid(f) c + sigmoid(i) tanh(g), h = sigmoid(o) tanh(c'), the gates in LSTMCell's order.
// Written with LibTorch's ops this is ten elementwise passes, four chunk views and a concatenation
// of the gates' gradients in backward, each a dispatch per step; here one pass forward and one
// backward, which recomputes the activations from the gates rather than keeping them. Values
// equal the plain ops' within float rounding (sigmoid and tanh are the kernels' polynomials,
// vector_lanes.h), on AVX2 or AVX-512 as the CPU runs; every other tensor (CUDA, double, CPU
// autocast) and a CPU with neither take the plain ops.
#pragma once

#include <torch/types.h>

#include <tuple>

#include "kernels/kernel_isa.h"

namespace saccade {

std::tuple<torch::Tensor, torch::Tensor> lstm_cell(const torch::Tensor& gates, const torch::Tensor& c);
// The same by a chosen kernel (tests run each one the CPU supports; none = the plain ops).
std::tuple<torch::Tensor, torch::Tensor> lstm_cell(
    KernelIsa isa, const torch::Tensor& gates, const torch::Tensor& c);

}  // namespace saccade
