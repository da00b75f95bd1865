// Lanes: W values of one type as a GCC vector, so that a kernel is written once and compiled for
// each instruction set.
//
//   template <int W> SACCADE_INLINE void scale(float* x, int64_t n, float s) {
//     for (int64_t i = 0; i + W <= n; i += W) store(x + i, load<W>(x + i) * s);
//   }
//   __attribute__((target("avx2,fma"))) void scale_avx2(float* x, int64_t n, float s) { scale<8>(x, n, s); }
//
// A body over Lanes, inlined into a function compiled for AVX2 and FMA (W = 32 bytes of values)
// or AVX-512 (W = 64 bytes), uses that instruction set's registers, and a * b + c becomes one
// FMA. W = 1 is a scalar, for the tails. The helpers are always inlined, so no vector crosses a
// call in the baseline ABI; GCC's note that it would (-Wpsabi) is silenced in the files that
// include this header (the kernels), where the bodies are instantiated.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#pragma GCC diagnostic ignored "-Wpsabi"

#define SACCADE_INLINE inline __attribute__((always_inline))

namespace saccade {

#if defined(__x86_64__)
// `Body`, a kernel over Lanes (always inlined), compiled into a function for one instruction set:
// OnAvx2<&body<8>>::run for AVX2 and FMA, OnAvx512<&body<16>>::run for AVX-512F (float lanes;
// half as many doubles). A target attribute cannot be a template argument: each set has its own.
template <auto Body>
struct OnAvx2;
template <typename... Args, void (*Body)(Args...)>
struct OnAvx2<Body> {
  __attribute__((target("avx2,fma"))) static void run(Args... args) { Body(args...); }
};

template <auto Body>
struct OnAvx512;
template <typename... Args, void (*Body)(Args...)>
struct OnAvx512<Body> {
  __attribute__((target("avx512f,fma"))) static void run(Args... args) { Body(args...); }
};
#endif

template <typename T, int W>
struct VectorOf {
  typedef T type __attribute__((vector_size(W * sizeof(T))));
};

// W values of T in one vector register (two or four for W wider than the instruction set's).
template <typename T, int W>
using Lanes = typename VectorOf<T, W>::type;

// W values from p, which needs no alignment.
template <int W, typename T>
SACCADE_INLINE Lanes<T, W> load(const T* p) {
  Lanes<T, W> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T, typename V>
SACCADE_INLINE void store(T* p, const V& v) {
  std::memcpy(p, &v, sizeof v);
}

// s in every lane: one broadcast (0 + s per lane would cost an add, as it is not s for s = -0).
template <int W, typename T>
SACCADE_INLINE Lanes<T, W> broadcast(T s) {
  using Index = std::conditional_t<sizeof(T) == 4, int32_t, int64_t>;
  return __builtin_shuffle(Lanes<T, W>{s}, Lanes<Index, W>{});
}

// The sum of v's lanes, halves added pairwise (a fixed order for each width).
template <typename V>
SACCADE_INLINE auto sum_lanes(const V& v) {
  using T = std::remove_cv_t<std::remove_reference_t<decltype(v[0])>>;
  constexpr int W = sizeof v / sizeof(T);
  if constexpr (W == 1) {
    return v[0];
  } else {
    Lanes<T, W / 2> low, high;
    std::memcpy(&low, &v, sizeof low);
    std::memcpy(&high, reinterpret_cast<const char*>(&v) + sizeof low, sizeof high);
    return sum_lanes(low + high);
  }
}

// W floats from p, or from W bf16 values (their bits, the top half of a float's) widened exactly.
template <int W>
SACCADE_INLINE Lanes<float, W> load_floats(const float* p) {
  return load<W>(p);
}
template <int W>
SACCADE_INLINE Lanes<float, W> load_floats(const uint16_t* bf16) {
  const auto bits = __builtin_convertvector(load<W>(bf16), Lanes<uint32_t, W>) << 16;
  Lanes<float, W> v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

// tanh of every lane. Floats: a rational minimax approximation (the one Eigen's fast tanh uses),
// |error| < 4e-7 for every float, with no branch, so it vectorizes. Doubles (the gradient tests)
// take std::tanh lane by lane.
template <typename V>
SACCADE_INLINE V tanh_lanes(const V& value) {
  V x = value;
  if constexpr (std::is_same_v<std::remove_cv_t<std::remove_reference_t<decltype(x[0])>>, double>) {
    for (int i = 0; i < static_cast<int>(sizeof x / sizeof x[0]); ++i) x[i] = std::tanh(x[i]);
    return x;
  } else {
    // Clamped where tanh rounds to +-1; written so that a NaN fails both tests and stays NaN.
    const V limit = V{} + 7.90531110763549805f;
    x = x > limit ? limit : x;
    x = x < -limit ? -limit : x;
    const V x2 = x * x;
    V p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
    p = x2 * p + -8.60467152213735e-11f;
    p = x2 * p + 5.12229709037114e-08f;
    p = x2 * p + 1.48572235717979e-05f;
    p = x2 * p + 6.37261928875436e-04f;
    p = x2 * p + 4.89352455891786e-03f;
    V q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
    q = x2 * q + 2.26843463243900e-03f;
    q = x2 * q + 4.89352518554385e-03f;
    return x * p / q;
  }
}

// e^x of every float lane: x = n ln 2 + r with |r| <= ln 2 / 2, e^r by Cephes' degree-5
// polynomial, 2^n put in the exponent bits; relative error < 2.5e-7 where the result is a normal
// float. Below ln of the smallest normal float the result is 0 (a softmax's share that small is
// lost in its sum anyway); above 88.376 (n would pass 127; e^x is within 1.4x of the largest
// float) +inf; NaN stays NaN.
template <typename V>
SACCADE_INLINE V exp_lanes(const V& value) {
  constexpr int W = sizeof(V) / sizeof(float);
  using Bits = Lanes<int32_t, W>;
  const V low = V{} - 87.3365447505f, high = V{} + 88.3762626647949f;
  V x = value < low ? low : value;
  x = x > high ? high : x;
  // n = round(x / ln 2), by the float addition that rounds to an integer at 1.5 * 2^23.
  const V n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  const V r = (x - n * 0.693359375f) - n * -2.12194440e-4f;
  V p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = r * p + 8.3334519073e-3f;
  p = r * p + 4.1665795894e-2f;
  p = r * p + 1.6666665459e-1f;
  p = r * p + 5.0000001201e-1f;
  p = r * r * p + r + 1.0f;
  // 2^n as exponent bits; n + 127 stays in 1 .. 254 for the clamped x, so the scale is normal.
  const Bits scale_bits = (__builtin_convertvector(n, Bits) + 127) << 23;
  V scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  V result = p * scale;
  result = value < low ? V{} : result;
  result = value > high ? V{} + __builtin_inff() : result;
  return value != value ? value : result;
}

}  // namespace saccade
