// softmax_crossentropy.cpp - fused softmax + cross-entropy forward/backward.
#include "engine/model/layers/softmax_crossentropy.h"

#include <atomic>
#include <cmath>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
constexpr size_t kRowGrain = 8;  // fewest rows worth a thread
}  // namespace

size_t softmax_crossentropy_forward(float* losses, float* probs, const float* logits,
                                    const int32_t* targets, int B, int T, int V) {
  if (on_cuda()) {
    return cuda::softmax_crossentropy_forward(losses, probs, logits, targets, B, T, V);
  }
  const size_t rows = static_cast<size_t>(B) * T;
  std::atomic<size_t> counted{0};
  parallel_for(rows, kRowGrain, [&](size_t r0, size_t r1) {
    size_t part_counted = 0;
    for (size_t r = r0; r < r1; ++r) {
      const float* z = logits + r * V;
      float* p = probs + r * V;
      float mx = z[0];
      for (int i = 1; i < V; ++i) mx = z[i] > mx ? z[i] : mx;
      float sum = 0.0f;
      for (int i = 0; i < V; ++i) {
        p[i] = std::exp(z[i] - mx);
        sum += p[i];
      }
      const float inv = 1.0f / sum;
      for (int i = 0; i < V; ++i) p[i] *= inv;
      const int32_t target = targets[r];
      if (target < 0) {
        losses[r] = 0.0f;
        continue;
      }
      // log-sum-exp form: exact even where probs[target] underflows to 0
      losses[r] = std::log(sum) + mx - z[target];
      ++part_counted;
    }
    counted.fetch_add(part_counted, std::memory_order_relaxed);
  });
  return counted.load();
}

void softmax_crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                                   float dloss, int B, int T, int V) {
  if (on_cuda()) {
    return cuda::softmax_crossentropy_backward(dlogits, probs, targets, dloss, B, T, V);
  }
  const size_t rows = static_cast<size_t>(B) * T;
  parallel_for(rows, kRowGrain, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const int32_t target = targets[r];
      if (target < 0) continue;
      const float* p = probs + r * V;
      float* d = dlogits + r * V;
      for (int i = 0; i < V; ++i) d[i] += dloss * p[i];
      d[target] -= dloss;
    }
  });
}

}  // namespace plexus::engine
