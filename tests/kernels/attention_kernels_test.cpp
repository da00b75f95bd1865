// The fused attention kernels against the same formulas in plain LibTorch ops: values and every
// gradient, in float (the rational tanh) and double (std::tanh), over steps that read a shrinking
// prefix of the keys as the decoder's steps do.
#include "kernels/attention_kernels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <vector>

namespace saccade {
namespace {

class AttentionKernelsTest : public ::testing::TestWithParam<torch::ScalarType> {
 protected:
  AttentionKernelsTest() { torch::manual_seed(0); }
  torch::TensorOptions options() const { return torch::TensorOptions().dtype(GetParam()); }
  // Relative tolerance: float sums run in another order, and its tanh is approximate.
  double tolerance() const { return GetParam() == torch::kFloat ? 1e-4 : 1e-10; }
};

// Three steps over keys [B=4, L=5, A=7] whose active rows shrink 4 -> 4 -> 2; each step's scores
// feed a random linear loss. `scores(keys, q_t, w)` is the kernel or the plain formula.
TEST_P(AttentionKernelsTest, AdditiveScoresMatchPlainOpsWithGradients) {
  const auto keys = torch::randn({4, 5, 7}, options()).requires_grad_();
  const auto w = torch::randn({7}, options()).requires_grad_();
  const std::vector<int64_t> active = {4, 4, 2};
  std::vector<torch::Tensor> queries, loss_weights;
  for (const int64_t n : active) {
    queries.push_back(torch::randn({n, 7}, options()).requires_grad_());
    loss_weights.push_back(torch::randn({n, 5}, options()));
  }
  const auto plain = [&] {
    auto loss = torch::zeros({}, options());
    for (size_t t = 0; t < active.size(); ++t) {
      const auto e = torch::matmul(torch::tanh(keys.narrow(0, 0, active[t]) + queries[t].unsqueeze(1)), w);
      loss = loss + (e * loss_weights[t]).sum();  // e [n, L]
    }
    return loss;
  };
  const auto fused = [&] {
    const TimeSharedTensor shared(keys);
    auto loss = torch::zeros({}, options());
    for (size_t t = 0; t < active.size(); ++t) {
      const auto e = additive_scores(shared, queries[t], w);
      EXPECT_EQ(e.sizes(), torch::IntArrayRef({active[t], 5}));
      loss = loss + (e * loss_weights[t]).sum();
    }
    return loss;
  };
  std::vector<torch::Tensor> inputs = {keys, w};
  inputs.insert(inputs.end(), queries.begin(), queries.end());
  const auto expected = plain();
  const auto expected_grads = torch::autograd::grad({expected}, inputs);
  const auto actual = fused();
  const auto actual_grads = torch::autograd::grad({actual}, inputs);
  EXPECT_NEAR(actual.item<double>(), expected.item<double>(), tolerance() * expected.abs().item<double>());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const double error = (actual_grads[i] - expected_grads[i]).abs().max().item<double>();
    EXPECT_LT(error, tolerance() * (1 + expected_grads[i].abs().max().item<double>())) << "input " << i;
  }
}

TEST_P(AttentionKernelsTest, AdditiveScoresWithoutGradientsRecordNothing) {
  const auto keys = torch::randn({2, 3, 4}, options());
  const auto e =
      additive_scores(TimeSharedTensor(keys), torch::randn({2, 4}, options()), torch::randn({4}, options()));
  EXPECT_FALSE(e.requires_grad());
}

TEST_P(AttentionKernelsTest, ExpectedValueMatchesBatchedProductWithGradients) {
  // B=3 images, N=2 heads, L=5 locations, Dv=9 (not a multiple of the kernel's 4-row unroll).
  const auto alpha = torch::softmax(torch::randn({3, 2, 5}, options()), -1).detach().requires_grad_();
  const auto values = torch::randn({3, 2, 5, 9}, options()).requires_grad_();
  const auto loss_weight = torch::randn({3, 2, 9}, options());
  const auto expected = torch::matmul(alpha.unsqueeze(2), values).squeeze(2);  // [B, N, Dv]
  const auto actual = expected_value(alpha, values);
  EXPECT_LT((actual - expected).abs().max().item<double>(), tolerance());
  const auto expected_grads = torch::autograd::grad({(expected * loss_weight).sum()}, {alpha, values});
  const auto actual_grads = torch::autograd::grad({(actual * loss_weight).sum()}, {alpha, values});
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_LT((actual_grads[i] - expected_grads[i]).abs().max().item<double>(), tolerance()) << "input " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(
    CPU, AttentionKernelsTest, ::testing::Values(torch::kFloat, torch::kDouble), [](const auto& info) {
      return std::string(info.param == torch::kFloat ? "Float" : "Double");
    });

}  // namespace
}  // namespace saccade
