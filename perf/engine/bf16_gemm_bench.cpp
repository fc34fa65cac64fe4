// plexus-bf16-gemm-bench - GFLOP/s of sgemm_bf16 (engine/device/cpu_bf16_gemm.h, the CPU GEMM
// of --autocast bf16) beside one-threaded OpenBLAS cblas_sgemm, on the linear layer's shapes.
//
//   plexus-bf16-gemm-bench [seconds per measurement, default 0.2]
//
// For rows = 1024 and each (C, OC) of the GPT layers (qkv, attention projection, MLP up and
// down at C = 128 and 256), the three products of engine/model/layers/matmul.cpp:
//   forward  out (rows,OC) = inp (rows,C) x W (OC,C)^T        M=rows N=OC K=C    (N,T)
//   dinp     dinp (rows,C) += dout (rows,OC) x W (OC,C)        M=rows N=C  K=OC   (N,N)
//   dweight  dW (OC,C) += dout (rows,OC)^T x inp (rows,C)      M=OC   N=C  K=rows (T,N)
// Each figure is 2*M*N*K over the median of 5 timed runs of repeated calls (each run at
// least the given seconds), one thread. rel.err is ||C_bf16 - C_fp32|| / ||C_fp32|| (Frobenius)
// for inputs uniform in [-1, 1]. A figure to read, never a pass/fail; the machine's other load
// shows in the spread. Exit codes: 0 done, 1 no AVX512-BF16 here, 2 bad usage.
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "engine/device/cpu_bf16_gemm.h"

namespace {

struct Product {
  const char* form;
  bool ta, tb;
  int M, N, K;
  const float *A, *B;
  int lda, ldb;
  float beta;
};

// Median over 5 runs of the seconds per call of `call`, each run repeating it for `min_seconds`.
template <class F>
double seconds_per_call(F&& call, double min_seconds) {
  using Clock = std::chrono::steady_clock;
  call();  // warm the caches and the packing buffers
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    int calls = 0;
    const Clock::time_point start = Clock::now();
    double elapsed = 0.0;
    do {
      call();
      ++calls;
      elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    } while (elapsed < min_seconds);
    runs.push_back(elapsed / calls);
  }
  std::sort(runs.begin(), runs.end());
  return runs[2];
}

}  // namespace

int main(int argc, char** argv) {
  double min_seconds = 0.2;
  if (argc == 2) {
    char* end = nullptr;
    min_seconds = std::strtod(argv[1], &end);
    if (end == argv[1] || *end != '\0') min_seconds = -1.0;
  }
  // at most a minute per measurement: "inf" would never end, "nan" compares false
  if (argc > 2 || !(min_seconds > 0.0 && min_seconds <= 60.0)) {
    std::fprintf(stderr, "usage: %s [seconds per measurement, above 0 and at most 60; default "
                 "0.2]\n", argv[0]);
    return 2;
  }
  if (!plexus::engine::cpu_bf16_gemm_supported()) {
    std::printf("this processor (or build) has no AVX512-BF16: nothing to measure\n");
    return 1;
  }
  openblas_set_num_threads(1);
  const int rows = 1024;
  const int shapes[][2] = {{128, 384}, {128, 128}, {128, 512},  {512, 128},
                           {128, 256}, {256, 768}, {256, 1024}, {1024, 256}};
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::printf("one thread; rows = %d; GFLOP/s = 2*M*N*K / time\n", rows);
  std::printf("%5s %5s %-8s %5s %5s %5s %10s %10s %8s %9s\n", "C", "OC", "form", "M", "N", "K",
              "openblas", "bf16", "speedup", "rel.err");
  double log_sum = 0.0;
  int count = 0;
  for (const auto& shape : shapes) {
    const int C = shape[0], OC = shape[1];
    std::vector<float> inp(static_cast<size_t>(rows) * C), dout(static_cast<size_t>(rows) * OC),
        W(static_cast<size_t>(OC) * C);
    for (float& x : inp) x = dist(rng);
    for (float& x : dout) x = dist(rng);
    for (float& x : W) x = dist(rng);
    const Product products[] = {
        {"forward", false, true, rows, OC, C, inp.data(), W.data(), C, C, 0.0f},
        {"dinp", false, false, rows, C, OC, dout.data(), W.data(), OC, C, 1.0f},
        {"dweight", true, false, OC, C, rows, dout.data(), inp.data(), OC, C, 1.0f},
    };
    for (const Product& p : products) {
      std::vector<float> c_blas(static_cast<size_t>(p.M) * p.N, 0.0f), c_bf16 = c_blas;
      const double blas = seconds_per_call(
          [&] {
            cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans,
                        p.tb ? CblasTrans : CblasNoTrans, p.M, p.N, p.K, 1.0f, p.A, p.lda, p.B,
                        p.ldb, p.beta, c_blas.data(), p.N);
          },
          min_seconds);
      const double bf16 = seconds_per_call(
          [&] {
            plexus::engine::sgemm_bf16(p.ta, p.tb, p.M, p.N, p.K, 1.0f, p.A, p.lda, p.B, p.ldb,
                                       p.beta, c_bf16.data(), p.N);
          },
          min_seconds);
      // one call of each from zero for the error
      std::fill(c_blas.begin(), c_blas.end(), 0.0f);
      std::fill(c_bf16.begin(), c_bf16.end(), 0.0f);
      cblas_sgemm(CblasRowMajor, p.ta ? CblasTrans : CblasNoTrans, p.tb ? CblasTrans : CblasNoTrans,
                  p.M, p.N, p.K, 1.0f, p.A, p.lda, p.B, p.ldb, 0.0f, c_blas.data(), p.N);
      plexus::engine::sgemm_bf16(p.ta, p.tb, p.M, p.N, p.K, 1.0f, p.A, p.lda, p.B, p.ldb, 0.0f,
                                 c_bf16.data(), p.N);
      double diff = 0.0, norm = 0.0;
      for (size_t i = 0; i < c_blas.size(); ++i) {
        diff += (static_cast<double>(c_bf16[i]) - c_blas[i]) * (c_bf16[i] - c_blas[i]);
        norm += static_cast<double>(c_blas[i]) * c_blas[i];
      }
      const double flop = 2.0 * p.M * p.N * p.K;
      std::printf("%5d %5d %-8s %5d %5d %5d %10.1f %10.1f %7.2fx %9.2e\n", C, OC, p.form, p.M, p.N,
                  p.K, flop / blas * 1e-9, flop / bf16 * 1e-9, blas / bf16, std::sqrt(diff / norm));
      log_sum += std::log(blas / bf16);
      ++count;
    }
  }
  std::printf("geometric mean speedup: %.2fx\n", std::exp(log_sum / count));
  return 0;
}
