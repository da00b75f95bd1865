// Rng: the data stage's random numbers, identical on every platform and standard library.
//
//   Rng rng(mix_seed({seed, epoch}));      // one independent stream per (seed, epoch)
//   int64_t k = rng.uniform_int(0, 9);     // 0..9 inclusive
//
// std::mt19937 is portable but std::uniform_int_distribution and friends are not (libstdc++ and
// libc++ give different values), and the shapes world must be byte-identical everywhere for a
// given seed. So this is splitmix64 (Steele, Lea, Flood 2014) with explicit range reductions.
#pragma once

#include <cstdint>
#include <initializer_list>

namespace saccade {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  // 64 uniformly random bits.
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform integer in [low, high], both included; requires low <= high. The modulo bias is
  // below 2^-40 for any range this code uses (< 2^24).
  int64_t uniform_int(int64_t low, int64_t high) {
    const uint64_t span = static_cast<uint64_t>(high - low) + 1;
    return low + static_cast<int64_t>(next() % span);
  }

  // Uniform double in [0, 1) with 53 random bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // True with probability p.
  bool bernoulli(double p) { return uniform() < p; }

 private:
  uint64_t state_;
};

// A seed for an independent stream derived from several integers (seed, epoch, index, ...).
inline uint64_t mix_seed(std::initializer_list<uint64_t> parts) {
  uint64_t h = 0x6A09E667F3BCC909ull;
  for (uint64_t part : parts) {
    Rng mixer(h ^ part);
    h = mixer.next();
  }
  return h;
}

}  // namespace saccade
