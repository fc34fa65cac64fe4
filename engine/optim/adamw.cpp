// adamw.cpp - AdamW step over a slice of the flat buffers (see adamw.h for the update), on the
// selected compute device.
#include "engine/optim/adamw.h"

#include <cmath>

#include "engine/device/adamw_element.h"
#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"
#include "topology/target_clones.h"

namespace plexus::engine {

namespace {
constexpr size_t kGrain = 8192;  // fewest elements worth a thread

// Elements [begin, end). Compiled for AVX-512, AVX2 and the baseline, the best chosen at load
// time (PLX_TARGET_CLONES, topology/target_clones.h); this file is built with -fno-math-errno
// (engine/CMakeLists.txt) so that sqrt, of a value never negative, vectorizes. Every version
// does the same IEEE operations per element.
PLX_TARGET_CLONES void adamw_range(float* params, const float* grads, float* m, float* v,
                                   const uint8_t* decay_mask, size_t begin, size_t end,
                                   const AdamWStep& s) {
  for (size_t i = begin; i < end; ++i) adamw_element(params, grads, m, v, decay_mask, i, s);
}
}  // namespace

void adamw_step(float* params, const float* grads, float* m, float* v, size_t n, int64_t step,
                const AdamWConfig& config, const uint8_t* decay_mask) {
  if (n == 0 || step < 1) return;
  if (on_cuda()) {
    return cuda::adamw_step(params, grads, m, v, n, step, config.lr, config.beta1, config.beta2,
                            config.eps, config.weight_decay, decay_mask);
  }
  adamw_step_host(params, grads, m, v, n, step, config, decay_mask);
}

void adamw_step_host(float* params, const float* grads, float* m, float* v, size_t n,
                     int64_t step, const AdamWConfig& config, const uint8_t* decay_mask) {
  if (n == 0 || step < 1) return;
  const AdamWStep s = adamw_step_scalars(config.lr, config.beta1, config.beta2, config.eps,
                                         config.weight_decay, step);
  parallel_for(n, kGrain, [&](size_t i0, size_t i1) {
    adamw_range(params, grads, m, v, decay_mask, i0, i1, s);
  });
}

}  // namespace plexus::engine
