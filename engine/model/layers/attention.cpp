// attention.cpp - causal multi-head self-attention forward/backward on sgemm, per (b,h).
//
// The q k^T product is computed for the full (T,T) square and the upper triangle is then
// discarded: twice the flops of the triangle, but one large sgemm beats T small dot products.
#include "engine/model/layers/attention.h"

#include <cblas.h>

#include <cmath>
#include <cstddef>
#include <vector>

#include "engine/device/compute.h"
#include "engine/device/cpu_threads.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {

// Row-wise causal softmax of a (T,T) score block in place: row t over columns 0..t, with the
// row max subtracted before exp; columns > t are set to 0.
void causal_softmax(float* a, int T) {
  for (int t = 0; t < T; ++t) {
    float* row = a + static_cast<size_t>(t) * T;
    float mx = row[0];
    for (int j = 1; j <= t; ++j) mx = row[j] > mx ? row[j] : mx;
    float sum = 0.0f;
    for (int j = 0; j <= t; ++j) {
      row[j] = std::exp(row[j] - mx);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
    for (int j = 0; j <= t; ++j) row[j] *= inv;
    for (int j = t + 1; j < T; ++j) row[j] = 0.0f;
  }
}

}  // namespace

void attention_forward(float* out, float* att, const float* inp, int B, int T, int C, int NH) {
  if (on_cuda()) return cuda::attention_forward(out, att, inp, B, T, C, NH);
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for(static_cast<size_t>(B) * NH, 1, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) {
      const int b = static_cast<int>(i / NH), h = static_cast<int>(i % NH);
      const float* q = inp + static_cast<size_t>(b) * T * C3 + static_cast<size_t>(h) * hs;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* a = att + (static_cast<size_t>(b) * NH + h) * T * T;
      float* o = out + static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * hs;
      // a (T,T) = scale * q (T,hs) x k (T,hs)^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, C3, k, C3, 0.0f,
                  a, T);
      causal_softmax(a, T);
      // o (T,hs) = a (T,T) x v (T,hs)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, C3, 0.0f,
                  o, C);
    }
  });
}

// With P = att, dP = dO V^T; dV += P^T dO; dS = P * (dP - rowsum(P * dP)) (softmax backward);
// dQ += scale dS K; dK += scale dS^T Q.
void attention_backward(float* dinp, float* scratch, const float* dout, const float* inp,
                        const float* att, int B, int T, int C, int NH) {
  if (on_cuda()) return cuda::attention_backward(dinp, scratch, dout, inp, att, B, T, C, NH);
  const int hs = C / NH;
  const int C3 = 3 * C;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hs));
  parallel_for(static_cast<size_t>(B) * NH, 1, [&](size_t i0, size_t i1) {
    // The caller's part uses `scratch`; a worker's, a (T,T) block of its own.
    thread_local std::vector<float> own;
    float* ds = scratch;
    if (i0 != 0) {
      own.resize(static_cast<size_t>(T) * T);
      ds = own.data();
    }
    for (size_t i = i0; i < i1; ++i) {
      const int b = static_cast<int>(i / NH), h = static_cast<int>(i % NH);
      const size_t qoff = static_cast<size_t>(b) * T * C3 + static_cast<size_t>(h) * hs;
      const float* q = inp + qoff;
      const float* k = q + C;
      const float* v = q + 2 * C;
      float* dq = dinp + qoff;
      float* dk = dq + C;
      float* dv = dq + 2 * C;
      const float* p = att + (static_cast<size_t>(b) * NH + h) * T * T;
      const float* d_o = dout + static_cast<size_t>(b) * T * C + static_cast<size_t>(h) * hs;
      // dP (T,T) = dO (T,hs) x V (T,hs)^T
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, d_o, C, v, C3, 0.0f,
                  ds, T);
      // dV (T,hs) += P^T (T,T) x dO (T,hs)
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, p, T, d_o, C, 1.0f,
                  dv, C3);
      for (int t = 0; t < T; ++t) {
        const float* prow = p + static_cast<size_t>(t) * T;
        float* row = ds + static_cast<size_t>(t) * T;
        float dot = 0.0f;
        for (int j = 0; j <= t; ++j) dot += prow[j] * row[j];
        for (int j = 0; j <= t; ++j) row[j] = prow[j] * (row[j] - dot);
        for (int j = t + 1; j < T; ++j) row[j] = 0.0f;
      }
      // dQ (T,hs) += scale * dS (T,T) x K (T,hs); dK (T,hs) += scale * dS^T x Q (T,hs)
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, ds, T, k, C3, 1.0f,
                  dq, C3);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, ds, T, q, C3, 1.0f,
                  dk, C3);
    }
  });
}

}  // namespace plexus::engine
