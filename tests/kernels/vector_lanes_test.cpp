// The kernels' vector functions against the C library in double precision, over the whole float
// range, at every width the kernels use (1, 8 and 16 lanes): exp (the cross-entropy) and tanh
// (the additive attention).
#include "kernels/vector_lanes.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "kernels/kernel_isa.h"

namespace saccade {
namespace {

// f over n floats, W lanes at a time, compiled for the instruction set that runs W lanes.
template <int W>
SACCADE_INLINE void apply(const float* x, float* y, int64_t n, bool tanh) {
  for (int64_t i = 0; i < n; i += W)
    store(y + i, tanh ? tanh_lanes(load<W>(x + i)) : exp_lanes(load<W>(x + i)));
}
__attribute__((target("avx512f,fma"))) void apply16(const float* x, float* y, int64_t n, bool tanh) {
  apply<16>(x, y, n, tanh);
}
__attribute__((target("avx2,fma"))) void apply8(const float* x, float* y, int64_t n, bool tanh) {
  apply<8>(x, y, n, tanh);
}
void apply1(const float* x, float* y, int64_t n, bool tanh) {
  apply<1>(x, y, n, tanh);
}

// Every width this CPU runs: 1, and 8 and 16 lanes where it has AVX2 or AVX-512.
std::vector<std::pair<int, std::function<void(const float*, float*, int64_t, bool)>>> widths() {
  std::vector<std::pair<int, std::function<void(const float*, float*, int64_t, bool)>>> all = {{1, apply1}};
  for (const KernelIsa isa : supported_kernel_isas()) {
    if (isa == KernelIsa::avx2) all.emplace_back(8, apply8);
    if (isa == KernelIsa::avx512) all.emplace_back(16, apply16);
  }
  return all;
}

// Every 1/64 from `from` to `to`, a multiple of 16 values.
std::vector<float> grid(double from, double to) {
  std::vector<float> x;
  for (double value = from; value < to || x.size() % 16 != 0; value += 1.0 / 64)
    x.push_back(static_cast<float>(value));
  return x;
}

TEST(VectorLanes, ExpMatchesStdExpOverTheFloatRange) {
  const auto x = grid(-100, 100);
  for (const auto& [width, run] : widths()) {
    std::vector<float> y(x.size());
    run(x.data(), y.data(), static_cast<int64_t>(x.size()), false);
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = std::exp(static_cast<double>(x[i]));
      if (x[i] < -87.3365447505f) {
        EXPECT_EQ(y[i], 0.0f) << x[i] << " at " << width << " lanes";
      } else if (x[i] > 88.3762626647949f) {
        EXPECT_EQ(y[i], std::numeric_limits<float>::infinity()) << x[i] << " at " << width << " lanes";
      } else {
        EXPECT_LT(std::abs(y[i] - expected) / expected, 2.5e-7) << x[i] << " at " << width << " lanes";
      }
    }
  }
}

TEST(VectorLanes, TanhMatchesStdTanhOverTheFloatRange) {
  const auto x = grid(-20, 20);
  for (const auto& [width, run] : widths()) {
    std::vector<float> y(x.size());
    run(x.data(), y.data(), static_cast<int64_t>(x.size()), true);
    double worst = 0;
    for (size_t i = 0; i < x.size(); ++i)
      worst = std::max(worst, std::abs(y[i] - std::tanh(static_cast<double>(x[i]))));
    EXPECT_LT(worst, 4e-7) << width << " lanes";
  }
}

TEST(VectorLanes, NaNStaysNaN) {
  std::vector<float> x(16, std::numeric_limits<float>::quiet_NaN()), y(16);
  for (const auto& [width, run] : widths()) {
    for (const bool tanh : {false, true}) {
      run(x.data(), y.data(), 16, tanh);
      for (const float value : y)
        EXPECT_TRUE(std::isnan(value)) << width << " lanes, " << (tanh ? "tanh" : "exp");
    }
  }
}

}  // namespace
}  // namespace saccade
