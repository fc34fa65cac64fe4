// encoder.cpp - token + position embedding (GPT-2's wte + wpe), after llm.c's encoder_*.
#include "engine/model/layers/encoder.h"

#include <cstddef>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {
constexpr size_t kRowGrain = 16;      // fewest rows worth a thread
constexpr size_t kChannelGrain = 32;  // fewest channels worth a thread
}  // namespace

void encoder_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                     int B, int T, int C) {
  if (on_cuda()) return cuda::encoder_forward(out, tokens, wte, wpe, B, T, C);
  parallel_for(static_cast<size_t>(B) * T, kRowGrain, [&](size_t r0, size_t r1) {
    for (size_t bt = r0; bt < r1; ++bt) {
      float* o = out + bt * C;
      const float* tok = wte + static_cast<size_t>(tokens[bt]) * C;
      const float* pos = wpe + (bt % T) * C;
      for (int c = 0; c < C; ++c) o[c] = tok[c] + pos[c];
    }
  });
}

void encoder_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                      int B, int T, int C) {
  if (on_cuda()) return cuda::encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
  // by channels: rows of one token (or position) add into the same row of dwte (dwpe), so
  // each thread takes every row in order for its own channels
  parallel_for(static_cast<size_t>(C), kChannelGrain, [&](size_t c0, size_t c1) {
    for (int b = 0; b < B; ++b) {
      for (int t = 0; t < T; ++t) {
        const size_t bt = static_cast<size_t>(b) * T + t;
        const float* d = dout + bt * C;
        float* dtok = dwte + static_cast<size_t>(tokens[bt]) * C;
        float* dpos = dwpe + static_cast<size_t>(t) * C;
        for (size_t c = c0; c < c1; ++c) {
          dtok[c] += d[c];
          dpos[c] += d[c];
        }
      }
    }
  });
}

}  // namespace plexus::engine
