// The fused attention kernels against the same formulas in plain LibTorch ops: values and every
// gradient, in float (the rational tanh) and double (std::tanh), by each kernel the CPU runs, over
// steps that read a shrinking prefix of the keys as the decoder's steps do. Widths of 37 take
// whole vectors of every kernel (4 to 16 lanes) and a tail of scalars.
#include "kernels/attention_kernels.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <limits>
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

// Three steps over keys [B=4, L=5, A=37] whose active rows shrink 4 -> 4 -> 2; each step's scores
// feed a random linear loss.
TEST_P(AttentionKernelsTest, AdditiveScoresMatchPlainOpsWithGradients) {
  if (supported_kernel_isas().empty()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  const auto keys = torch::randn({4, 5, 37}, options()).requires_grad_();
  const auto w = torch::randn({37}, options()).requires_grad_();
  const std::vector<int64_t> active = {4, 4, 2};
  std::vector<torch::Tensor> queries, loss_weights;
  for (const int64_t n : active) {
    queries.push_back(torch::randn({n, 37}, options()).requires_grad_());
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
  const auto fused = [&](KernelIsa isa) {
    const TimeSharedTensor shared(keys);
    auto loss = torch::zeros({}, options());
    for (size_t t = 0; t < active.size(); ++t) {
      const auto e = additive_scores(isa, shared, queries[t], w);
      EXPECT_EQ(e.sizes(), torch::IntArrayRef({active[t], 5}));
      loss = loss + (e * loss_weights[t]).sum();
    }
    return loss;
  };
  std::vector<torch::Tensor> inputs = {keys, w};
  inputs.insert(inputs.end(), queries.begin(), queries.end());
  const auto expected = plain();
  const auto expected_grads = torch::autograd::grad({expected}, inputs);
  for (const KernelIsa isa : supported_kernel_isas()) {
    SCOPED_TRACE(to_string(isa));
    const auto actual = fused(isa);
    const auto actual_grads = torch::autograd::grad({actual}, inputs);
    EXPECT_NEAR(actual.item<double>(), expected.item<double>(), tolerance() * expected.abs().item<double>());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const double error = (actual_grads[i] - expected_grads[i]).abs().max().item<double>();
      EXPECT_LT(error, tolerance() * (1 + expected_grads[i].abs().max().item<double>())) << "input " << i;
    }
  }
}

// Every float the rational tanh can meet, through the kernel's lanes and its tail: keys from -12
// to 12 (past the clamp at +-7.9) with q = 0 and w = one-hot, so e[l] is tanh of one key.
TEST(AttentionKernelsTanhTest, ScoresFollowTanhOverItsWholeRange) {
  const int64_t L = 4801, A = 37;
  const auto x = torch::linspace(-12, 12, L);  // [L]
  for (const int64_t a : {int64_t{0}, int64_t{20}, A - 1}) {
    auto keys = torch::zeros({1, L, A});
    keys.select(2, a).copy_(x.unsqueeze(0));
    const auto w = torch::zeros({A}).index_fill_(0, torch::tensor({a}), 1.0);
    for (const KernelIsa isa : supported_kernel_isas()) {
      const auto e = additive_scores(isa, TimeSharedTensor(keys), torch::zeros({1, A}), w);  // [1, L]
      EXPECT_LT((e[0] - torch::tanh(x)).abs().max().item<double>(), 1e-6) << to_string(isa) << " lane " << a;
    }
  }
  // A NaN key stays NaN (a clamp that picked the limit would turn it into a score of 1).
  auto keys = torch::zeros({1, 2, A});
  keys[0][1][3] = std::numeric_limits<float>::quiet_NaN();
  for (const KernelIsa isa : supported_kernel_isas()) {
    const auto e = additive_scores(isa, TimeSharedTensor(keys), torch::zeros({1, A}), torch::ones({A}));
    EXPECT_FALSE(std::isnan(e[0][0].item<float>())) << to_string(isa);
    EXPECT_TRUE(std::isnan(e[0][1].item<float>())) << to_string(isa);
  }
}

TEST_P(AttentionKernelsTest, AdditiveScoresWithoutGradientsRecordNothing) {
  const auto keys = torch::randn({2, 3, 4}, options());
  const auto e =
      additive_scores(TimeSharedTensor(keys), torch::randn({2, 4}, options()), torch::randn({4}, options()));
  EXPECT_FALSE(e.requires_grad());
}

TEST_P(AttentionKernelsTest, ExpectedValueMatchesBatchedProductWithGradients) {
  if (supported_kernel_isas().empty()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  // B=3 images, N=2 heads, L=5 locations (not a multiple of the kernel's 4-row unroll), Dv=37.
  const auto alpha = torch::softmax(torch::randn({3, 2, 5}, options()), -1).detach().requires_grad_();
  const auto values = torch::randn({3, 2, 5, 37}, options()).requires_grad_();
  const auto loss_weight = torch::randn({3, 2, 37}, options());
  const auto expected = torch::matmul(alpha.unsqueeze(2), values).squeeze(2);  // [B, N, Dv]
  const auto expected_grads = torch::autograd::grad({(expected * loss_weight).sum()}, {alpha, values});
  for (const KernelIsa isa : supported_kernel_isas()) {
    SCOPED_TRACE(to_string(isa));
    const auto actual = expected_value(isa, alpha, values);
    EXPECT_LT((actual - expected).abs().max().item<double>(), tolerance());
    const auto actual_grads = torch::autograd::grad({(actual * loss_weight).sum()}, {alpha, values});
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_LT((actual_grads[i] - expected_grads[i]).abs().max().item<double>(), tolerance())
          << "input " << i;
    }
  }
}

// Beams: R query rows per image read that image's keys and values, once for all of them; the same
// as each row reading its own copy, by every kernel and by the plain ops. One image (its columns
// and locations split over the threads) and three.
TEST_P(AttentionKernelsTest, BeamsReadTheirImagesKeysAndValues) {
  torch::NoGradGuard no_grad;
  const int64_t R = 3, L = 7, A = 37, Dv = 1030;  // Dv: two blocks of columns and a tail
  for (const int64_t images : {1, 3}) {
    const auto keys = torch::randn({images, L, A}, options());
    const auto values = torch::randn({images, 2, L, Dv}, options());
    const auto q = torch::randn({images * R, A}, options());
    const auto w = torch::randn({A}, options());
    const auto alpha = torch::softmax(torch::randn({images * R, 2, L}, options()), -1);
    const auto expected_e =
        torch::matmul(torch::tanh(keys.repeat_interleave(R, 0) + q.unsqueeze(1)), w);  // [images R, L]
    const auto expected_z = torch::matmul(alpha.unsqueeze(-2), values.repeat_interleave(R, 0)).squeeze(-2);
    auto isas = supported_kernel_isas();
    isas.push_back(KernelIsa::none);
    for (const KernelIsa isa : isas) {
      SCOPED_TRACE(std::string(to_string(isa)) + " images " + std::to_string(images));
      const auto e = additive_scores(isa, TimeSharedTensor(keys), q, w, R);
      const auto z = expected_value(isa, alpha, values, R);
      EXPECT_LT((e - expected_e).abs().max().item<double>(), tolerance() * 10);
      EXPECT_LT((z - expected_z).abs().max().item<double>(), tolerance() * 10);
    }
    EXPECT_THROW(expected_value(alpha, values, 2), c10::Error);  // 9 rows are not 2 per image of 3
  }
}

// Images that read their rows of keys and values through an index (the images still searched
// after others left), repeated and out of order, beside the plain ops on the rows selected; an
// index outside the memory, or of the wrong length, is refused.
TEST_P(AttentionKernelsTest, ImagesReadTheirRowsThroughAnIndex) {
  torch::NoGradGuard no_grad;
  const int64_t B = 5, L = 7, A = 37, Dv = 1030;
  const auto keys = torch::randn({B, L, A}, options());
  const auto values = torch::randn({B, 2, L, Dv}, options());
  const auto w = torch::randn({A}, options());
  const auto images = torch::tensor(std::vector<int64_t>{4, 1, 1, 3}, torch::kLong);
  auto isas = supported_kernel_isas();
  isas.push_back(KernelIsa::none);
  for (const int64_t R : {1, 3}) {
    const int64_t rows = images.size(0) * R;
    const auto q = torch::randn({rows, A}, options());
    const auto alpha = torch::softmax(torch::randn({rows, 2, L}, options()), -1);
    const auto chosen_keys = keys.index_select(0, images).repeat_interleave(R, 0);
    const auto chosen_values = values.index_select(0, images).repeat_interleave(R, 0);
    const auto expected_e = torch::matmul(torch::tanh(chosen_keys + q.unsqueeze(1)), w);    // [rows, L]
    const auto expected_z = torch::matmul(alpha.unsqueeze(-2), chosen_values).squeeze(-2);  // [rows, 2, Dv]
    for (const KernelIsa isa : isas) {
      SCOPED_TRACE(std::string(to_string(isa)) + " beams " + std::to_string(R));
      const auto e = additive_scores(isa, TimeSharedTensor(keys), q, w, R, images);
      const auto z = expected_value(isa, alpha, values, R, images);
      EXPECT_LT((e - expected_e).abs().max().item<double>(), tolerance() * 10);
      EXPECT_LT((z - expected_z).abs().max().item<double>(), tolerance() * 10);
      const auto outside = torch::tensor(std::vector<int64_t>{4, 1, 5, 3}, torch::kLong);
      EXPECT_THROW(expected_value(isa, alpha, values, R, outside), c10::Error);
      EXPECT_THROW(additive_scores(isa, TimeSharedTensor(keys), q, w, R, outside.neg()), c10::Error);
      EXPECT_THROW(expected_value(isa, alpha, values, R, images.narrow(0, 0, 3)), c10::Error);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    CPU, AttentionKernelsTest, ::testing::Values(torch::kFloat, torch::kDouble), [](const auto& info) {
      return std::string(info.param == torch::kFloat ? "Float" : "Double");
    });

}  // namespace
}  // namespace saccade
