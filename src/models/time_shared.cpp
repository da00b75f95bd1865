// TimeSharedWeight and TimeSharedTensor: autograd nodes that gather per-step gradients (see
// time_shared.h).
#include "models/time_shared.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/torch.h>

namespace saccade {
namespace {

using torch::autograd::variable_list;

// The token's node of a TimeSharedWeight: dW = X^T G over the steps the loss depends on.
class WeightGrad : public torch::autograd::Node {
 public:
  explicit WeightGrad(std::shared_ptr<TimeSharedWeight::Steps> steps) : steps_(std::move(steps)) {}
  std::string name() const override { return "TimeSharedWeightBackward"; }

  variable_list apply(variable_list&& /*token_grads*/) override {
    std::vector<torch::Tensor> inputs, grads;
    for (size_t t = 0; t < steps_->grads.size(); ++t) {
      if (!steps_->grads[t].defined()) continue;  // a step the loss does not depend on
      inputs.push_back(steps_->inputs[t]);
      grads.push_back(steps_->grads[t]);
      steps_->grads[t] = torch::Tensor();
    }
    if (inputs.empty()) return {torch::zeros_like(steps_->weight)};
    return {torch::mm(torch::cat(inputs).t(), torch::cat(grads))};  // [K, M] = X^T G
  }

 private:
  std::shared_ptr<TimeSharedWeight::Steps> steps_;
};

// One step of a TimeSharedWeight: dx = g W^T now, g kept for WeightGrad.
class StepGrad : public torch::autograd::Node {
 public:
  StepGrad(std::shared_ptr<TimeSharedWeight::Steps> steps, size_t step)
      : steps_(std::move(steps)), step_(step) {}
  std::string name() const override { return "TimeSharedWeightStepBackward"; }

  variable_list apply(variable_list&& grads) override {
    const auto& grad = grads[0];  // [n, M]
    torch::Tensor grad_x;
    if (should_compute_output(0)) grad_x = torch::mm(grad, steps_->weight.t());  // [n, K]
    if (should_compute_output(1)) steps_->grads[step_] = grad;
    return {grad_x, torch::empty({0}, grad.options())};
  }

 private:
  std::shared_ptr<TimeSharedWeight::Steps> steps_;
  size_t step_;
};

// The token's node of a TimeSharedTensor: hands over the accumulated gradient.
class TensorGrad : public torch::autograd::Node {
 public:
  explicit TensorGrad(std::shared_ptr<TimeSharedTensor::State> state) : state_(std::move(state)) {}
  std::string name() const override { return "TimeSharedTensorBackward"; }

  variable_list apply(variable_list&& /*token_grads*/) override {
    auto grad = state_->grad.defined() ? state_->grad : torch::zeros_like(state_->value);
    state_->grad = torch::Tensor();  // the next backward pass starts from zero
    return {grad};
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

TimeSharedWeight::TimeSharedWeight(const torch::Tensor& weight) : steps_(std::make_shared<Steps>()) {
  steps_->weight = weight.detach();
  std::shared_ptr<WeightGrad> node;
  if (torch::autograd::compute_requires_grad(weight)) {
    node = std::shared_ptr<WeightGrad>(new WeightGrad(steps_), torch::autograd::deleteNode);
  }
  token_ = make_token(weight, node);
}

torch::Tensor TimeSharedWeight::multiply(const torch::Tensor& x) {
  auto y = torch::mm(x.detach(), steps_->weight);  // [n, M]
  if (torch::autograd::compute_requires_grad(x, token_)) {
    auto node =
        std::shared_ptr<StepGrad>(new StepGrad(steps_, steps_->inputs.size()), torch::autograd::deleteNode);
    node->set_next_edges(torch::autograd::collect_next_edges(x, token_));
    torch::autograd::set_history(y, node);
    steps_->inputs.push_back(token_.requires_grad() ? x.detach() : torch::Tensor());
    steps_->grads.emplace_back();
  }
  return y;
}

TimeSharedTensor::TimeSharedTensor(const torch::Tensor& value) : state_(std::make_shared<State>()) {
  state_->value = value.detach();
  std::shared_ptr<TensorGrad> node;
  if (torch::autograd::compute_requires_grad(value)) {
    node = std::shared_ptr<TensorGrad>(new TensorGrad(state_), torch::autograd::deleteNode);
  }
  token_ = make_token(value, node);
}

torch::Tensor TimeSharedTensor::grad_rows(int64_t n) {
  if (!state_->grad.defined()) state_->grad = torch::zeros_like(state_->value);
  return state_->grad.narrow(0, 0, n);
}

}  // namespace saccade
