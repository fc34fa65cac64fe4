// gelu.cpp - GELU (tanh approximation) forward/backward, after llm.c's gelu_*.
//
// tanh is a rational approximation (Eigen's generic_fast_tanh_float), |error| <= 3.3e-7 over
// all floats, evaluated 4 lanes at a time with GCC/Clang vector extensions: calling libm's
// tanhf per element made GELU a quarter of a training step, and GCC will not vectorize the
// input clamp as scalar code under the default -ftrapping-math.
#include "engine/model/layers/gelu.h"

#include <algorithm>
#include <cstring>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {

using Vec4 = float __attribute__((vector_size(16)));

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCube = 0.044715f;
constexpr size_t kGrainVecs = 2048;  // fewest 4-float vectors worth a thread

inline Vec4 splat(float x) { return Vec4{x, x, x, x}; }

// tanh(x) = p(x) / q(x), p odd of degree 13, q even of degree 6, x clamped to +-7.905 where
// the float result is +-1.
inline Vec4 fast_tanh(Vec4 x) {
  const Vec4 hi = splat(7.90531110763549805f), lo = -hi;
  x = x > hi ? hi : x;
  x = x < lo ? lo : x;
  const Vec4 x2 = x * x;
  Vec4 p = splat(-2.76076847742355e-16f);
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * x;
  Vec4 q = splat(1.19825839466702e-06f);
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p / q;
}

// Loads lanes i..i+3 of a, zero-padding past n (a fixed-size copy on the fast path, so it
// compiles to one unaligned vector load).
inline Vec4 load(const float* a, size_t i, size_t n) {
  Vec4 v = splat(0.0f);
  if (n - i >= 4) {
    std::memcpy(&v, a + i, sizeof(v));
  } else {
    std::memcpy(&v, a + i, (n - i) * sizeof(float));
  }
  return v;
}
// Stores lanes i..i+3 of v into a, dropping those past n.
inline void store(float* a, size_t i, size_t n, Vec4 v) {
  if (n - i >= 4) {
    std::memcpy(a + i, &v, sizeof(v));
  } else {
    std::memcpy(a + i, &v, (n - i) * sizeof(float));
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
  if (on_cuda()) return cuda::gelu_forward(out, inp, n);
  parallel_for((n + 3) / 4, kGrainVecs, [&](size_t v0, size_t v1) {
    const size_t end = std::min(n, 4 * v1);
    for (size_t i = 4 * v0; i < end; i += 4) {
      const Vec4 x = load(inp, i, end);
      const Vec4 u = kGeluScale * (x + kGeluCube * x * x * x);
      store(out, i, end, 0.5f * x * (1.0f + fast_tanh(u)));
    }
  });
}

// d/dx = 0.5 (1 + tanh u) + 0.5 x sech^2(u) du/dx, du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  if (on_cuda()) return cuda::gelu_backward(dinp, inp, dout, n);
  parallel_for((n + 3) / 4, kGrainVecs, [&](size_t v0, size_t v1) {
    const size_t end = std::min(n, 4 * v1);
    for (size_t i = 4 * v0; i < end; i += 4) {
      const Vec4 x = load(inp, i, end);
      const Vec4 u = kGeluScale * (x + kGeluCube * x * x * x);
      const Vec4 th = fast_tanh(u);
      const Vec4 sech2 = 1.0f - th * th;
      const Vec4 du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
      const Vec4 grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * du;
      store(dinp, i, end, load(dinp, i, end) + grad * load(dout, i, end));
    }
  });
}

}  // namespace plexus::engine
