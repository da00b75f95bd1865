// few_rows_linear against a double-precision product for every kernel this CPU runs: row counts
// across the kFewRows groups, widths that leave remainders, float32 and bf16 weights (widened,
// and by AVX-512 BF16 dot products where the CPU has them), strided weights, with and without
// bias; and
// the fallbacks (gradients, too many rows, other dtypes) returning torch::linear's result itself.
#include "kernels/few_rows_linear.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

namespace saccade {
namespace {

TEST(FewRowsLinear, MatchesBlasForEveryShapeItTakes) {
  if (supported_kernel_isas().empty()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  // K: a multiple of 16, a multiple of 8 only, neither; N: odd, and less than one 4-row block.
  for (const auto& [N, K] :
       std::vector<std::pair<int64_t, int64_t>>{{37, 64}, {101, 40}, {3, 77}, {1000, 512}}) {
    const auto bias = torch::randn({N});
    // bf16 weights are widened exactly, so the reference multiplies their values in double; the
    // float32 weights' product differs from it by ~2e-3 sqrt(K), twenty times the tolerance.
    for (const auto dtype : {torch::kFloat, torch::kBFloat16}) {
      const auto weight = torch::randn({N, K}).to(dtype);
      for (int64_t M = 1; M <= kMaxRows; ++M) {
        const auto x = torch::randn({M, K});
        const auto reference = torch::nn::functional::linear(
            x.to(torch::kDouble), weight.to(torch::kDouble),
            bias.to(torch::kDouble));  // [M, N]
        for (const KernelIsa isa : supported_kernel_isas()) {
          const auto y = few_rows_linear(isa, x, weight, bias, Bf16Product::widen);
          ASSERT_EQ(y.sizes(), (std::vector<int64_t>{M, N}));
          ASSERT_EQ(y.scalar_type(), torch::kFloat);
          const double error = (y.to(torch::kDouble) - reference).abs().max().item<double>();
          EXPECT_LT(error, 1e-4 * std::sqrt(static_cast<double>(K)))
              << to_string(isa) << " " << dtype << " M=" << M << " N=" << N << " K=" << K;
          const auto no_bias = few_rows_linear(isa, x, weight, {}, Bf16Product::widen);
          EXPECT_LT(
              (no_bias.to(torch::kDouble) - (reference - bias.to(torch::kDouble))).abs().max().item<double>(),
              1e-4 * std::sqrt(static_cast<double>(K)));
          // The bf16 kernel ran, not torch::linear of the widened weight: the float32 kernel on
          // those values sums the same products in the same order.
          if (dtype == torch::kBFloat16) {
            EXPECT_TRUE(torch::equal(y, few_rows_linear(isa, x, weight.to(torch::kFloat), bias)))
                << to_string(isa) << " M=" << M << " N=" << N << " K=" << K;
          }
        }
      }
    }
  }
}

// bf16 weights by AVX-512 BF16 dot products: x rounded to bf16, then exact products summed in
// float32, against the double product of the rounded x and the weights; x's rounding shows
// against the widening kernel, which keeps x in float32. Elsewhere the dot products are refused.
TEST(FewRowsLinear, Bf16DotProductsRoundOnlyXToBf16) {
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  if (!has_avx512_bf16()) {
    if (supported_kernel_isas().empty()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
    EXPECT_THROW(
        few_rows_linear(
            KernelIsa::avx2, torch::randn({2, 64}), torch::randn({8, 64}).to(torch::kBFloat16), {},
            Bf16Product::dot),
        std::logic_error);
    GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  }
  EXPECT_THROW(
      few_rows_linear(
          KernelIsa::avx2, torch::randn({2, 64}), torch::randn({8, 64}).to(torch::kBFloat16), {},
          Bf16Product::dot),
      std::logic_error);
  // K: a multiple of 32 (one instruction's pairs), of 16 only, neither; N: odd, and less than
  // one 4-row block.
  for (const auto& [N, K] :
       std::vector<std::pair<int64_t, int64_t>>{{37, 64}, {101, 48}, {3, 77}, {1000, 512}}) {
    const auto bias = torch::randn({N});
    const auto weight = torch::randn({N, K}).to(torch::kBFloat16);
    const double tolerance = 1e-4 * std::sqrt(static_cast<double>(K));
    for (int64_t M = 1; M <= kMaxRows; ++M) {
      const auto x = torch::randn({M, K});
      const auto reference = torch::nn::functional::linear(
          x.to(torch::kBFloat16).to(torch::kDouble), weight.to(torch::kDouble), bias.to(torch::kDouble));
      const auto y = few_rows_linear(KernelIsa::avx512, x, weight, bias, Bf16Product::dot);
      ASSERT_EQ(y.sizes(), (std::vector<int64_t>{M, N}));
      ASSERT_EQ(y.scalar_type(), torch::kFloat);
      EXPECT_LT((y.to(torch::kDouble) - reference).abs().max().item<double>(), tolerance)
          << "M=" << M << " N=" << N << " K=" << K;
      const auto widened = few_rows_linear(KernelIsa::avx512, x, weight, bias, Bf16Product::widen);
      if (M * N >= 1000) {
        EXPECT_GT((y - widened).abs().max().item<double>(), tolerance)
            << "M=" << M << " N=" << N << " K=" << K;
      }
    }
  }
}

TEST(FewRowsLinear, ReadsABlockOfColumnsOfAWiderWeight) {
  if (supported_kernel_isas().empty()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  torch::NoGradGuard no_grad;
  // An LSTM input weight [4H, E + D] multiplies the context with its columns E .. E + D: row
  // stride E + D, not D.
  const auto full = torch::randn({48, 24 + 40});
  const auto block = full.narrow(1, 24, 40);  // [48, 40], stride (64, 1)
  const auto x = torch::randn({5, 40});
  const auto reference = torch::mm(x.to(torch::kDouble), block.t().to(torch::kDouble));
  for (const KernelIsa isa : supported_kernel_isas())
    EXPECT_LT(
        (few_rows_linear(isa, x, block).to(torch::kDouble) - reference).abs().max().item<double>(), 1e-4);
}

TEST(FewRowsLinear, FallsBackToTorchLinearWhereItDoesNotApply) {
  torch::manual_seed(0);
  const auto weight = torch::randn({20, 16});
  const auto x = torch::randn({3, 16}, torch::requires_grad());
  // A gradient is needed: torch::linear, with its autograd history.
  const auto y = few_rows_linear(x, weight);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), weight.sum(0).expand({3, 16}), 1e-5, 1e-5));  // d sum(x W^T) / dx
  torch::NoGradGuard no_grad;
  // Too many rows and double precision: bit-identical to torch::linear.
  const auto many = torch::randn({kMaxRows + 1, 16});
  EXPECT_TRUE(torch::equal(few_rows_linear(many, weight), torch::nn::functional::linear(many, weight)));
  const auto doubles = torch::randn({2, 16}, torch::kDouble);
  EXPECT_TRUE(torch::equal(
      few_rows_linear(doubles, weight.to(torch::kDouble)),
      torch::nn::functional::linear(doubles, weight.to(torch::kDouble))));
  // A weight whose rows are not contiguous along K (a transposed view).
  const auto transposed = torch::randn({16, 20}).t();
  EXPECT_TRUE(torch::equal(
      few_rows_linear(x.detach(), transposed), torch::nn::functional::linear(x.detach(), transposed)));
  // bf16 weights where the kernel does not apply: torch::linear of their float32 values.
  const auto bf16 = weight.to(torch::kBFloat16);
  EXPECT_TRUE(
      torch::equal(few_rows_linear(many, bf16), torch::nn::functional::linear(many, bf16.to(torch::kFloat))));
}

}  // namespace
}  // namespace saccade
