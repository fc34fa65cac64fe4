// layernorm.cpp - LayerNorm forward/backward, after llm.c's layernorm_*.
#include "engine/model/layers/layernorm.h"

#include <cmath>
#include <cstddef>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
constexpr size_t kRowGrain = 16;      // fewest rows worth a thread
constexpr size_t kChannelGrain = 32;  // fewest channels worth a thread
}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp,
                       const float* weight, const float* bias, int B, int T, int C) {
  if (on_cuda()) return cuda::layernorm_forward(out, mean, rstd, inp, weight, bias, B, T, C);
  const size_t rows = static_cast<size_t>(B) * T;
  parallel_for(rows, kRowGrain, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const float* x = inp + r * C;
      float m = 0.0f;
      for (int c = 0; c < C; ++c) m += x[c];
      m /= C;
      float v = 0.0f;
      for (int c = 0; c < C; ++c) {
        const float d = x[c] - m;
        v += d * d;
      }
      v /= C;
      const float s = 1.0f / std::sqrt(v + kLayerNormEps);
      float* o = out + r * C;
      for (int c = 0; c < C; ++c) o[c] = (x[c] - m) * s * weight[c] + bias[c];
      mean[r] = m;
      rstd[r] = s;
    }
  });
}

// With n = (x - mean) * rstd and dn = dout * weight:
//   dx = rstd * (dn - mean_c(dn) - n * mean_c(dn * n)).
void layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                        const float* inp, const float* weight, const float* mean,
                        const float* rstd, int B, int T, int C) {
  if (on_cuda()) {
    return cuda::layernorm_backward(dinp, dweight, dbias, dout, inp, weight, mean, rstd, B, T,
                                    C);
  }
  const size_t rows = static_cast<size_t>(B) * T;
  // dinp by rows; then dweight and dbias by channels, each summed over the rows in order
  parallel_for(rows, kRowGrain, [&](size_t r0, size_t r1) {
    for (size_t r = r0; r < r1; ++r) {
      const float* d = dout + r * C;
      const float* x = inp + r * C;
      float* dx = dinp + r * C;
      const float m = mean[r];
      const float s = rstd[r];
      float dn_mean = 0.0f;
      float dn_n_mean = 0.0f;
      for (int c = 0; c < C; ++c) {
        const float n = (x[c] - m) * s;
        const float dn = weight[c] * d[c];
        dn_mean += dn;
        dn_n_mean += dn * n;
      }
      dn_mean /= C;
      dn_n_mean /= C;
      for (int c = 0; c < C; ++c) {
        const float n = (x[c] - m) * s;
        const float dn = weight[c] * d[c];
        dx[c] += s * (dn - dn_mean - n * dn_n_mean);
      }
    }
  });
  parallel_for(static_cast<size_t>(C), kChannelGrain, [&](size_t c0, size_t c1) {
    for (size_t r = 0; r < rows; ++r) {
      const float* d = dout + r * C;
      const float* x = inp + r * C;
      const float m = mean[r];
      const float s = rstd[r];
      for (size_t c = c0; c < c1; ++c) {
        dbias[c] += d[c];
        dweight[c] += (x[c] - m) * s * d[c];
      }
    }
  });
}

}  // namespace plexus::engine
