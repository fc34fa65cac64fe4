// matmul.cpp - linear layer forward/backward as three sgemm calls (llm.c's matmul_*, on BLAS).
#include "engine/model/layers/matmul.h"

#include <cblas.h>

#include <cstddef>

#include "engine/device/compute.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

void matmul_forward(float* out, const float* inp, const float* weight, const float* bias,
                    int B, int T, int C, int OC) {
  if (on_cuda()) return cuda::matmul_forward(out, inp, weight, bias, B, T, C, OC);
  const int rows = B * T;
  float beta = 0.0f;
  if (bias != nullptr) {  // start every row at the bias, then add the product to it
    for (int r = 0; r < rows; ++r) {
      float* o = out + static_cast<size_t>(r) * OC;
      for (int j = 0; j < OC; ++j) o[j] = bias[j];
    }
    beta = 1.0f;
  }
  // (rows,C) x (OC,C)^T -> (rows,OC)
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, OC, C, 1.0f, inp, C, weight, C,
              beta, out, OC);
}

void matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout,
                     const float* inp, const float* weight, int B, int T, int C, int OC) {
  if (on_cuda()) {
    return cuda::matmul_backward(dinp, dweight, dbias, dout, inp, weight, B, T, C, OC);
  }
  const int rows = B * T;
  if (dinp != nullptr) {  // (rows,OC) x (OC,C) -> (rows,C)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, C, OC, 1.0f, dout, OC, weight,
                C, 1.0f, dinp, C);
  }
  // (rows,OC)^T x (rows,C) -> (OC,C)
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, rows, 1.0f, dout, OC, inp, C,
              1.0f, dweight, C);
  if (dbias != nullptr) {
    for (int r = 0; r < rows; ++r) {
      const float* d = dout + static_cast<size_t>(r) * OC;
      for (int j = 0; j < OC; ++j) dbias[j] += d[j];
    }
  }
}

}  // namespace plexus::engine
