// Finite-difference gradient checks for the model tests (double precision).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

namespace saccade::testing {

struct GradientError {
  double max_abs = 0.0;  // largest |autograd - central difference|
  std::string where;     // "<name>[<flat index>]" of that element
};

// Compares autograd's gradient of the scalar `loss()` with respect to each named tensor against
// central differences (step eps) over every element. The tensors must be contiguous double
// leaves that require grad; they are restored after each probe.
inline GradientError gradient_error(
    const std::function<torch::Tensor()>& loss,
    const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
    double eps = 1e-6) {
  std::vector<torch::Tensor> inputs;
  for (const auto& named : tensors) inputs.push_back(named.second);
  const auto grads = torch::autograd::grad({loss()}, inputs, {}, false, false, /*allow_unused=*/true);
  GradientError error;
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    double* data = inputs[i].data_ptr<double>();
    const auto analytic = grads[i].defined() ? grads[i].contiguous() : torch::zeros_like(inputs[i]);
    const double* expected = analytic.data_ptr<double>();
    for (int64_t j = 0; j < inputs[i].numel(); ++j) {
      const double saved = data[j];
      data[j] = saved + eps;
      const double plus = loss().item<double>();
      data[j] = saved - eps;
      const double minus = loss().item<double>();
      data[j] = saved;
      const double diff = std::abs((plus - minus) / (2 * eps) - expected[j]);
      if (diff > error.max_abs) {
        error.max_abs = diff;
        error.where = tensors[i].first + "[" + std::to_string(j) + "]";
      }
    }
  }
  return error;
}

}  // namespace saccade::testing
