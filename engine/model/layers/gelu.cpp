// gelu.cpp - GELU (tanh approximation) forward/backward, after llm.c's gelu_*.
//
// tanh is a rational approximation (Eigen's generic_fast_tanh_float), |error| <= 3.3e-7 over
// all floats, evaluated 16 lanes at a time with GCC/Clang vector extensions: calling libm's
// tanhf per element made GELU a quarter of a training step, and GCC will not vectorize the
// input clamp as scalar code under the default -ftrapping-math. The loops are compiled for
// AVX-512, AVX2 and the engine's baseline (x86-64-v2) and the processor's best is chosen at load
// time (PLX_TARGET_CLONES, topology/target_clones.h, as the collectives' reductions do); with
// -ffp-contract=off every version does the same IEEE operations per element, so all give the
// same bits.
#include "engine/model/layers/gelu.h"

#include <algorithm>
#include <cstring>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"
#include "topology/target_clones.h"

// 64-byte vectors passed between the inline helpers below: GCC notes that their ABI would differ
// without AVX-512, which does not matter to functions that never leave this file.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace plexus::engine {

namespace {

constexpr size_t kLanes = 16;
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));

constexpr float kGeluScale = 0.7978845608028654f;  // sqrt(2 / pi)
constexpr float kGeluCube = 0.044715f;
constexpr size_t kGrainVecs = 512;  // fewest vectors worth a thread

inline Vec splat(float x) { return Vec{} + x; }

// tanh(x) = p(x) / q(x), p odd of degree 13, q even of degree 6, x clamped to +-7.905 where
// the float result is +-1.
inline Vec fast_tanh(const Vec& u) {
  Vec x = u;
  const Vec hi = splat(7.90531110763549805f), lo = -hi;
  x = x > hi ? hi : x;
  x = x < lo ? lo : x;
  const Vec x2 = x * x;
  Vec p = splat(-2.76076847742355e-16f);
  p = p * x2 + 2.00018790482477e-13f;
  p = p * x2 + -8.60467152213735e-11f;
  p = p * x2 + 5.12229709037114e-08f;
  p = p * x2 + 1.48572235717979e-05f;
  p = p * x2 + 6.37261928875436e-04f;
  p = p * x2 + 4.89352455891786e-03f;
  p = p * x;
  Vec q = splat(1.19825839466702e-06f);
  q = q * x2 + 1.18534705686654e-04f;
  q = q * x2 + 2.26843463243900e-03f;
  q = q * x2 + 4.89352518554385e-03f;
  return p / q;
}

// Loads lanes i..i+kLanes-1 of a, zero-padding past n (a fixed-size copy on the fast path, so it
// compiles to one unaligned vector load).
inline Vec load(const float* a, size_t i, size_t n) {
  Vec v = splat(0.0f);
  if (n - i >= kLanes) {
    std::memcpy(&v, a + i, sizeof(v));
  } else {
    std::memcpy(&v, a + i, (n - i) * sizeof(float));
  }
  return v;
}
// Stores lanes i..i+kLanes-1 of v into a, dropping those past n.
inline void store(float* a, size_t i, size_t n, const Vec& v) {
  if (n - i >= kLanes) {
    std::memcpy(a + i, &v, sizeof(v));
  } else {
    std::memcpy(a + i, &v, (n - i) * sizeof(float));
  }
}

PLX_TARGET_CLONES void gelu_forward_range(float* out, const float* inp, size_t begin,
                                          size_t end) {
  for (size_t i = begin; i < end; i += kLanes) {
    const Vec x = load(inp, i, end);
    const Vec u = kGeluScale * (x + kGeluCube * x * x * x);
    store(out, i, end, 0.5f * x * (1.0f + fast_tanh(u)));
  }
}

// d/dx = 0.5 (1 + tanh u) + 0.5 x sech^2(u) du/dx, du/dx = sqrt(2/pi) (1 + 3 * 0.044715 x^2).
PLX_TARGET_CLONES void gelu_backward_range(float* dinp, const float* inp, const float* dout,
                                           size_t begin, size_t end) {
  for (size_t i = begin; i < end; i += kLanes) {
    const Vec x = load(inp, i, end);
    const Vec u = kGeluScale * (x + kGeluCube * x * x * x);
    const Vec th = fast_tanh(u);
    const Vec sech2 = 1.0f - th * th;
    const Vec du = kGeluScale * (1.0f + 3.0f * kGeluCube * x * x);
    const Vec grad = 0.5f * (1.0f + th) + 0.5f * x * sech2 * du;
    store(dinp, i, end, load(dinp, i, end) + grad * load(dout, i, end));
  }
}

}  // namespace

void gelu_forward(float* out, const float* inp, size_t n) {
  if (on_cuda()) return cuda::gelu_forward(out, inp, n);
  parallel_for((n + kLanes - 1) / kLanes, kGrainVecs, [&](size_t v0, size_t v1) {
    gelu_forward_range(out, inp, kLanes * v0, std::min(n, kLanes * v1));
  });
}

void gelu_backward(float* dinp, const float* inp, const float* dout, size_t n) {
  if (on_cuda()) return cuda::gelu_backward(dinp, inp, dout, n);
  parallel_for((n + kLanes - 1) / kLanes, kGrainVecs, [&](size_t v0, size_t v1) {
    gelu_backward_range(dinp, inp, dout, kLanes * v0, std::min(n, kLanes * v1));
  });
}

}  // namespace plexus::engine
