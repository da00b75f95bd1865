// TimeSharedWeight and TimeSharedTensor: autograd nodes that gather per-step gradients (see
// time_shared.h).
#include "kernels/time_shared.h"

#include <ATen/Parallel.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

#include <map>

#include "kernels/kernel_isa.h"

namespace saccade {
namespace {

using torch::autograd::variable_list;

// The rows of `parts` (2-D, the same columns) one after another: the tensor itself when there is
// one, else copied by the threads together (torch::cat copies part after part on one thread).
torch::Tensor concatenated_rows(const std::vector<torch::Tensor>& parts) {
  if (parts.size() == 1) return parts.front();
  std::vector<int64_t> offsets = {0};
  for (const auto& part : parts) offsets.push_back(offsets.back() + part.size(0));
  auto rows = torch::empty({offsets.back(), parts.front().size(1)}, parts.front().options());
  at::parallel_for(0, static_cast<int64_t>(parts.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) rows.narrow(0, offsets[i], parts[i].size(0)).copy_(parts[i]);
  });
  return rows;
}

// The token's node of a TimeSharedWeight: dW = X^T G over the steps the loss depends on.
class WeightGrad : public torch::autograd::Node {
 public:
  explicit WeightGrad(std::shared_ptr<TimeSharedWeight::Steps> steps) : steps_(std::move(steps)) {}
  std::string name() const override { return "TimeSharedWeightBackward"; }

  variable_list apply(variable_list&& /*token_grads*/) override {
    // The steps the loss depends on, grouped by the block of rows they multiply.
    std::map<int64_t, std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>>> blocks;
    for (size_t t = 0; t < steps_->grads.size(); ++t) {
      if (!steps_->grads[t].defined()) continue;
      blocks[steps_->rows[t]].first.push_back(steps_->inputs[t]);
      blocks[steps_->rows[t]].second.push_back(steps_->grads[t]);
      steps_->grads[t] = torch::Tensor();
    }
    // Built in the weight's own memory layout: for a transposed view (W = V^T) the gradient is
    // the transpose of a contiguous [M, K], so no transposing copy follows it.
    const auto& weight = steps_->weight;  // [K, M]
    const int64_t K = weight.size(0), M = weight.size(1);
    const bool transposed = !weight.is_contiguous() && weight.t().is_contiguous();
    // Each block's rows are written once (beta = 0), without zeros first; rows no step multiplied
    // are zeros.
    auto grad =
        torch::empty(transposed ? std::vector<int64_t>{M, K} : std::vector<int64_t>{K, M}, weight.options());
    const auto rows_of_w = [&](int64_t first, int64_t count) {
      return transposed ? grad.narrow(1, first, count) : grad.narrow(0, first, count);
    };
    int64_t written = 0;  // blocks are in order of their first row
    for (const auto& [row, block] : blocks) {
      const auto x = concatenated_rows(block.first), g = concatenated_rows(block.second);  // [N, k], [N, M]
      TORCH_CHECK(row >= written, "TimeSharedWeight: products over overlapping blocks of rows");
      if (row > written) rows_of_w(written, row - written).zero_();
      if (transposed) {
        rows_of_w(row, x.size(1)).addmm_(g.t(), x, 0.0);  // [M, k] = G^T X
      } else {
        rows_of_w(row, x.size(1)).addmm_(x.t(), g, 0.0);  // [k, M] = X^T G
      }
      written = row + x.size(1);
    }
    if (written < K) rows_of_w(written, K - written).zero_();
    return {transposed ? grad.t() : grad};  // [K, M]
  }

 private:
  std::shared_ptr<TimeSharedWeight::Steps> steps_;
};

// One step of a TimeSharedWeight: dx = g W[rows]^T now, g kept for WeightGrad.
class StepGrad : public torch::autograd::Node {
 public:
  StepGrad(std::shared_ptr<TimeSharedWeight::Steps> steps, size_t step, int64_t row, int64_t width)
      : steps_(std::move(steps)), step_(step), row_(row), width_(width) {}
  std::string name() const override { return "TimeSharedWeightStepBackward"; }

  variable_list apply(variable_list&& grads) override {
    const auto& grad = grads[0];  // [n, M]
    torch::Tensor grad_x;
    if (should_compute_output(0))
      grad_x = steps_->packed.linear(grad, steps_->weight.narrow(0, row_, width_));  // [n, k] = g W[rows]^T
    if (should_compute_output(1)) steps_->grads[step_] = grad;
    return {grad_x, torch::empty({0}, grad.options())};
  }

 private:
  std::shared_ptr<TimeSharedWeight::Steps> steps_;
  size_t step_;
  int64_t row_, width_;  // the block of W's rows this step multiplies
};

// The token's node of a TimeSharedTensor: the gradient of what the steps gathered.
class TensorGrad : public torch::autograd::Node {
 public:
  explicit TensorGrad(std::shared_ptr<TimeSharedTensor::State> state) : state_(std::move(state)) {}
  std::string name() const override { return "TimeSharedTensorBackward"; }

  variable_list apply(variable_list&& /*token_grads*/) override {
    const auto gathered = std::move(state_->gathered);  // the next backward pass starts anew
    return {gathered ? gathered->gradient() : torch::zeros_like(state_->value)};
  }

 private:
  std::shared_ptr<TimeSharedTensor::State> state_;
};

// An empty tensor whose backward node is `node`, with an edge to `shared`.
torch::Tensor make_token(const torch::Tensor& shared, const std::shared_ptr<torch::autograd::Node>& node) {
  auto token = torch::empty({0}, shared.options());
  if (node) {
    node->set_next_edges(torch::autograd::collect_next_edges(shared));
    torch::autograd::set_history(token, node);
  }
  return token;
}

}  // namespace

TimeSharedWeight::TimeSharedWeight(const torch::Tensor& weight)
    : steps_(std::make_shared<Steps>()), source_(weight) {
  steps_->weight = weight.detach();
  std::shared_ptr<WeightGrad> node;
  if (torch::autograd::compute_requires_grad(weight)) {
    node = std::shared_ptr<WeightGrad>(new WeightGrad(steps_), torch::autograd::deleteNode);
  }
  token_ = make_token(weight, node);
}

torch::Tensor TimeSharedWeight::multiply(const torch::Tensor& x, int64_t row) {
  const int64_t width = x.size(1);
  TORCH_CHECK(row >= 0 && row + width <= steps_->weight.size(0), "TimeSharedWeight: rows out of range");
  if (!takes_cpu_kernels(x, /*doubles_too=*/true) || x.scalar_type() != source_.scalar_type()) {
    return torch::matmul(x, source_.narrow(0, row, width));  // [n, M]
  }
  auto y = steps_->packed.linear(x.detach(), steps_->weight.narrow(0, row, width).t());  // [n, M]
  if (torch::autograd::compute_requires_grad(x, token_)) {
    auto node = std::shared_ptr<StepGrad>(
        new StepGrad(steps_, steps_->grads.size(), row, width), torch::autograd::deleteNode);
    node->set_next_edges(torch::autograd::collect_next_edges(x, token_));
    torch::autograd::set_history(y, node);
    steps_->inputs.push_back(token_.requires_grad() ? x.detach() : torch::Tensor());
    steps_->rows.push_back(row);
    steps_->grads.emplace_back();
  }
  return y;
}

TimeSharedTensor::TimeSharedTensor(const torch::Tensor& value)
    : state_(std::make_shared<State>()), source_(value) {
  state_->value = value.detach();
  std::shared_ptr<TensorGrad> node;
  if (torch::autograd::compute_requires_grad(value)) {
    node = std::shared_ptr<TensorGrad>(new TensorGrad(state_), torch::autograd::deleteNode);
  }
  token_ = make_token(value, node);
}

}  // namespace saccade
