// PackedWeight against a double-precision product, for every kernel this CPU runs (AVX-512,
// AVX2): row counts across blocks and chunks, widths across panels and half panels, depths across
// passes, weights stored in float32 and bf16 (widened, by AVX-512 BF16 dot products or AMX tiles), strided
// weights, with and without bias; the same
// bits for any thread count; and PackedWeights' choice of route, reuse of its packs and bf16
// copies inside a bf16 InferencePrecision.
#include "kernels/packed_linear.h"

#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "device/torch_compat.h"
#include "kernels/few_rows_linear.h"
#include "kernels/inference_precision.h"

namespace saccade {
namespace {

// x W^T + b in double precision.
torch::Tensor reference_linear(
    const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  auto y = torch::mm(x.to(torch::kDouble), weight.to(torch::kDouble).t());
  return bias.defined() ? y + bias.to(torch::kDouble) : y;
}

double max_error(const torch::Tensor& y, const torch::Tensor& reference) {
  return (y.to(torch::kDouble) - reference).abs().max().item<double>();
}

// Restores LibTorch's thread count at the end of a test.
class ThreadCount {
 public:
  ThreadCount() : saved_(at::get_num_threads()) {}
  ~ThreadCount() { at::set_num_threads(saved_); }

 private:
  int saved_;
};

TEST(PackedLinear, MatchesADoubleProductForEveryShape) {
  if (!PackedWeight::supported()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  // M: one partial block, two full blocks, a ragged block (the AVX2 kernel's second half-block
  // short), two chunks (108 and 92 rows); N: one column, less than half a panel, half a panel
  // plus one, a panel less one, a panel plus one, several panels; K: one, odd, more than a pass
  // (256), two passes plus one.
  // bf16 storage: the reference multiplies the rounded weights in double (the kernel widens them
  // exactly); the float32 weights' product is ~2e-3 sqrt(K) away from it, far past the tolerance.
  // bf16 dot products (AVX-512 BF16 only) and AMX tiles (AMX BF16 only): x rounded to bf16 as
  // well, every product of two bf16 values exact in float32; K odd pads the last pair with zero,
  // tiles pad K to a multiple of 32 and rows to whole tiles. M = 13 and 24 take one and two
  // tiles of rows, 200 several blocks of 32.
  struct Storage {
    WeightStorage storage;
    Bf16Product product;
    const char* name;
  };
  for (const KernelIsa isa : supported_kernel_isas()) {
    std::vector<Storage> storages = {
        {WeightStorage::fp32, Bf16Product::widen, ""}, {WeightStorage::bf16, Bf16Product::widen, " bf16"}};
    if (isa == KernelIsa::avx512 && has_avx512_bf16())
      storages.push_back({WeightStorage::bf16, Bf16Product::dot, " bf16 dot"});
    if (isa == KernelIsa::avx512 && has_amx_bf16())
      storages.push_back({WeightStorage::bf16, Bf16Product::amx, " bf16 AMX"});
    for (const auto& [storage, product, storage_name] : storages) {
      const bool dot = product != Bf16Product::widen;
      for (const int64_t M : {3, 13, 24, 31, 200}) {
        for (const int64_t N : {1, 9, 17, 31, 33, 100}) {
          for (const int64_t K : {1, 7, 300, 513}) {
            const auto weight = torch::randn({N, K});
            const auto stored =
                storage == WeightStorage::bf16 ? weight.to(torch::kBFloat16).to(torch::kFloat) : weight;
            const auto bias = torch::randn({N});
            const auto x = torch::randn({M, K});
            const auto x_read = dot ? x.to(torch::kBFloat16).to(torch::kFloat) : x;
            const double tolerance = 1e-5 * std::sqrt(static_cast<double>(K)) * 4;
            const PackedWeight packed(weight, bias, storage, product);
            ASSERT_EQ(packed.storage(), storage);
            ASSERT_EQ(packed.dot_products(), dot);
            ASSERT_EQ(packed.tiles(), product == Bf16Product::amx);
            const auto y = packed.linear(isa, x);
            ASSERT_EQ(y.sizes(), (std::vector<int64_t>{M, N}));
            const auto shape = std::string(to_string(isa)) + storage_name + " M=" + std::to_string(M) +
                               " N=" + std::to_string(N) + " K=" + std::to_string(K);
            EXPECT_LT(max_error(y, reference_linear(x_read, stored, bias)), tolerance) << shape;
            // bf16 panels give the float32 panels' bits for the rounded weights: widening is exact.
            if (storage == WeightStorage::bf16 && !dot) {
              EXPECT_TRUE(torch::equal(y, PackedWeight(stored, bias).linear(isa, x))) << shape;
            }
            // x's rounding shows: the dot products are not the widened product.
            if (dot && K > 1) {
              EXPECT_GT(max_error(y, reference_linear(x, stored, bias)), 1e-5) << shape;
            }
            EXPECT_LT(
                max_error(
                    PackedWeight(weight, {}, storage, product).linear(isa, x),
                    reference_linear(x_read, stored, {})),
                tolerance)
                << "no bias, " << shape;
          }
        }
      }
    }
  }
}

// bf16 dot products and tiles are refused where the CPU cannot run them, and need the AVX-512
// kernel; the default is the best the CPU has.
TEST(PackedLinear, Bf16DotProductsOnlyWhereTheCpuHasThem) {
  if (!PackedWeight::supported()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  const auto weight = torch::randn({40, 24});
  if (!has_amx_bf16()) {
    EXPECT_THROW(PackedWeight(weight, {}, WeightStorage::bf16, Bf16Product::amx), std::logic_error);
    EXPECT_FALSE(PackedWeight(weight, {}, WeightStorage::bf16).tiles());
  }
  if (!has_avx512_bf16()) {
    EXPECT_THROW(PackedWeight(weight, {}, WeightStorage::bf16, Bf16Product::dot), std::logic_error);
    EXPECT_FALSE(PackedWeight(weight, {}, WeightStorage::bf16).dot_products());  // the default widens
    GTEST_SKIP() << "this CPU has no AVX-512 BF16";
  }
  const PackedWeight packed(weight, {}, WeightStorage::bf16);
  EXPECT_TRUE(packed.dot_products());  // the default on this CPU
  EXPECT_EQ(packed.tiles(), has_amx_bf16());
  EXPECT_THROW(packed.linear(KernelIsa::avx2, torch::randn({20, 24})), std::logic_error);
  EXPECT_FALSE(PackedWeight(weight).dot_products());  // float32 storage
}

TEST(PackedLinear, PacksStridedWeightViews) {
  if (!PackedWeight::supported()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  torch::NoGradGuard no_grad;
  torch::manual_seed(1);
  const auto x = torch::randn({40, 70});
  // An LSTM input weight's block of columns (row stride wider than K) and a transposed view.
  const auto block = torch::randn({50, 30 + 70}).narrow(1, 30, 70);  // [50, 70], strides (100, 1)
  const auto transposed = torch::randn({70, 50}).t();                // [50, 70], strides (1, 50)
  for (const KernelIsa isa : supported_kernel_isas()) {
    EXPECT_LT(max_error(PackedWeight(block).linear(isa, x), reference_linear(x, block, {})), 1e-4)
        << to_string(isa);
    EXPECT_LT(max_error(PackedWeight(transposed).linear(isa, x), reference_linear(x, transposed, {})), 1e-4)
        << to_string(isa);
  }
}

TEST(PackedLinear, GivesTheSameBitsForAnyThreadCount) {
  if (!PackedWeight::supported()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  torch::NoGradGuard no_grad;
  torch::manual_seed(2);
  const ThreadCount restore;
  const auto weight = torch::randn({300, 130}), bias = torch::randn({300});
  // 200 rows are two chunks of 108 and 92 rows: one thread multiplies them in turn, two threads one
  // each; four threads (more than the chunks) share the panels of chunks of 192 and 8 rows.
  const auto x = torch::randn({200, 130});
  for (const KernelIsa isa : supported_kernel_isas()) {
    std::vector<PackedWeight> packs = {PackedWeight(weight, bias)};
    if (isa == KernelIsa::avx512 && has_avx512_bf16())
      packs.emplace_back(weight, bias, WeightStorage::bf16, Bf16Product::dot);
    if (isa == KernelIsa::avx512 && has_amx_bf16())
      packs.emplace_back(weight, bias, WeightStorage::bf16, Bf16Product::amx);
    for (const PackedWeight& packed : packs) {
      at::set_num_threads(1);
      const auto one = packed.linear(isa, x);
      for (const int threads : {2, 4}) {
        at::set_num_threads(threads);
        EXPECT_TRUE(torch::equal(packed.linear(isa, x), one)) << to_string(isa)
                                                              << (packed.tiles()          ? " bf16 AMX"
                                                                  : packed.dot_products() ? " bf16 dot"
                                                                                          : "")
                                                              << ", " << threads << " threads";
      }
    }
  }
}

TEST(PackedLinear, RejectsWhatItCannotMultiply) {
  if (!PackedWeight::supported()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  EXPECT_THROW(PackedWeight(torch::randn({4, 3}, torch::kDouble)), std::invalid_argument);
  EXPECT_THROW(PackedWeight(torch::randn({4, 3}), torch::randn({5})), std::invalid_argument);
  const PackedWeight packed(torch::randn({4, 3}));
  EXPECT_THROW(packed.linear(torch::randn({20, 5})), std::invalid_argument);
  EXPECT_THROW(packed.linear(KernelIsa::none, torch::randn({20, 3})), std::logic_error);
  if (best_kernel_isa() != KernelIsa::avx512) {
    EXPECT_THROW(packed.linear(KernelIsa::avx512, torch::randn({20, 3})), std::logic_error);
  }
}

TEST(PackedWeights, ChoosesTheRouteByRowsAndGradient) {
  torch::manual_seed(3);
  const auto weight = torch::randn({64, 48});
  const auto bias = torch::randn({64});
  PackedWeights packed;
  {
    torch::NoGradGuard no_grad;
    // Up to kMaxRows rows: few_rows_linear, bit for bit.
    const auto few = torch::randn({kMaxRows, 48});
    EXPECT_TRUE(torch::equal(packed.linear(few, weight, bias), few_rows_linear(few, weight, bias)));
    EXPECT_EQ(packed.size(), 0);
    // More rows: the packed kernel where the CPU has AVX-512 or AVX2, else torch::linear.
    const auto many = torch::randn({kMaxRows + 1, 48});
    const auto expected = PackedWeight::supported() ? PackedWeight(weight, bias).linear(many)
                                                    : torch::nn::functional::linear(many, weight, bias);
    EXPECT_TRUE(torch::equal(packed.linear(many, weight, bias), expected));
    EXPECT_TRUE(torch::equal(packed.linear(many, weight, bias), expected));
    // One pack per weight view, kept for the next products; a copy shares them.
    const int64_t packs = PackedWeight::supported() ? 1 : 0;
    EXPECT_EQ(packed.size(), packs);
    PackedWeights copy = packed;
    copy.linear(many.narrow(1, 0, 40), weight.narrow(1, 8, 40));
    EXPECT_EQ(packed.size(), 2 * packs);
  }
  // A gradient is needed: torch::linear, with its autograd history, and nothing packed.
  PackedWeights fresh;
  const auto x = torch::randn({kMaxRows + 4, 48}, torch::requires_grad());
  const auto y = fresh.linear(x, weight, bias);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), weight.sum(0).expand({kMaxRows + 4, 48}), 1e-5, 1e-5));
  EXPECT_EQ(fresh.size(), 0);
}

// runtime.precision=bf16 on the CPU: both routes read bf16 copies of W, made once per weight
// view; a float32 scope inside reads W itself again.
TEST(PackedWeights, ReadsBf16CopiesInsideABf16InferencePrecision) {
  if (!PackedWeight::supported()) GTEST_SKIP() << "this CPU has neither AVX2+FMA nor AVX-512F";
  torch::NoGradGuard no_grad;
  torch::manual_seed(4);
  const auto weight = torch::randn({64, 48});
  const auto bias = torch::randn({64});
  const auto few = torch::randn({5, 48});
  const auto many = torch::randn({kMaxRows + 1, 48});
  const torch::Device cpu(torch::kCPU);
  PackedWeights packed;
  EXPECT_FALSE(InferencePrecision::bf16_weights());
  {
    const InferencePrecision bf16({cpu, Precision::bf16});
    EXPECT_TRUE(InferencePrecision::bf16_weights());
    EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));  // the kernels take the products
    // The few-row kernel's bits for bf16 weights, widened or by dot products as this CPU has it
    // (torch::linear would sum in another order); on CPUs with AMX, the tiles' for every row count.
    const bool tiles = best_bf16_product() == Bf16Product::amx;
    const PackedWeight bf16_pack(weight, bias, WeightStorage::bf16);
    EXPECT_TRUE(torch::equal(
        packed.linear(few, weight, bias),
        tiles ? bf16_pack.linear(few) : few_rows_linear(few, weight.to(torch::kBFloat16), bias)));
    EXPECT_TRUE(torch::equal(packed.linear(many, weight, bias), bf16_pack.linear(many)));
    packed.linear(few, weight, bias);
    EXPECT_EQ(packed.size(), tiles ? 1 : 2);  // a bf16 copy of W's rows (without tiles) and a bf16 pack
    {
      const InferencePrecision fp32({cpu, Precision::fp32});
      EXPECT_FALSE(InferencePrecision::bf16_weights());
      EXPECT_TRUE(torch::equal(packed.linear(few, weight, bias), few_rows_linear(few, weight, bias)));
    }
    EXPECT_TRUE(InferencePrecision::bf16_weights());
  }
  EXPECT_FALSE(InferencePrecision::bf16_weights());
  {
    // Inside a bf16 autocast scope (training's forward pass), decoding still reads bf16 weights
    // with autocast off, and autocast is on again afterwards.
    const Autocast autocast({cpu, Precision::bf16});
    {
      const InferencePrecision bf16({cpu, Precision::bf16});
      EXPECT_FALSE(compat::autocast_enabled(c10::DeviceType::CPU));
      EXPECT_EQ(packed.linear(few, weight, bias).scalar_type(), torch::kFloat);
    }
    EXPECT_TRUE(compat::autocast_enabled(c10::DeviceType::CPU));
  }
  EXPECT_EQ(
      InferencePrecision::describe({cpu, Precision::bf16}),
      "cpu, bf16 weights (float32 activations and sums)");
  EXPECT_EQ(InferencePrecision::describe({cpu, Precision::fp32}), "cpu, fp32");
}

}  // namespace
}  // namespace saccade
