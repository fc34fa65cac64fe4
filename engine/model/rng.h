// rng.h - a small, portable random source for parameter init: splitmix64 (Steele, Lea, Flood
// 2014) for uniform bits and Box-Muller for normals. Unlike std::normal_distribution, the
// sequence is fixed by this file alone, so a seed gives the same model on every platform.
#pragma once

#include <cmath>
#include <cstdint>

namespace plexus::engine {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in (0, 1]: the top 53 bits, plus one ulp so log() never sees 0.
  double uniform_open0() { return (static_cast<double>(next() >> 11) + 1.0) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// Standard normal samples by Box-Muller, both values of each pair used.
class NormalSampler {
 public:
  explicit NormalSampler(uint64_t seed) : bits_(seed) {}

  double next() {
    if (have_spare_) {
      have_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2.0 * std::log(bits_.uniform_open0()));
    const double theta = 6.283185307179586 * bits_.uniform_open0();
    spare_ = r * std::sin(theta);
    have_spare_ = true;
    return r * std::cos(theta);
  }

 private:
  SplitMix64 bits_;
  double spare_ = 0.0;
  bool have_spare_ = false;
};

}  // namespace plexus::engine
