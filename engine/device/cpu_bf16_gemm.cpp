// cpu_bf16_gemm.cpp - see cpu_bf16_gemm.h.
//
// Loop nest (BLIS order; the names are Goto's):
//   for jc over N in kNC columns
//     for pc over K in kKC (block of op(B) packed once: every 32-column panel is
//                          [kKC/2][32] 32-bit lanes, each the bf16 pair (b[k][n], b[k+1][n]))
//       for ic over M in kMC rows (op(A) packed: every micro-panel of kMR rows is
//                          [kKC/2][kMR] 32-bit lanes, each the pair (a[i][k], a[i][k+1]))
//         for jr over the 32-column panels, ir over the kMR-row micro-panels: microkernel
// The microkernel keeps a kMR x 32 tile of C in 2 * kMR zmm accumulators (28 of the 32
// registers) and, per pair of k, loads two B vectors and broadcasts kMR A pairs into VDPBF16PS.
// An odd K (or block) pads its last pair with a zero; the columns past N are zero in the
// packed panel and masked off at the store; the last rows use the kernel instantiated for
// their count.
//
// Packing rounds with VCVTNE2PS2BF16 and lays the pairs out with two shapes of source:
//   lines along k (A not transposed, B transposed): 16 lines x 32 k are converted (one zmm of
//     16 pairs per line) and transposed as a 16 x 16 matrix of 32-bit pairs in registers;
//   lines along the lanes (A transposed, B not): rows k and k+1 of 16 lanes are converted
//     into one zmm and their bf16 interleaved by VPERMW.
#include "engine/device/cpu_bf16_gemm.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#if defined(__x86_64__) && (defined(__clang__) ? __clang_major__ >= 9 : __GNUC__ >= 10)
#define PLEXUS_BF16_GEMM_KERNEL 1
// g++ 12's AVX-512 intrinsics start their results from _mm512_undefined_*(), which
// -Wuninitialized and -Wmaybe-uninitialized report once they are inlined (GCC bug 105593, fixed in
// 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#else
#define PLEXUS_BF16_GEMM_KERNEL 0
#endif

namespace plexus::engine {

namespace {

// C = beta * C for the degenerate products (K == 0, alpha == 0); beta == 0 writes zeros.
void scale_c(int M, int N, float beta, float* C, int ldc) {
  for (int i = 0; i < M; ++i) {
    float* c = C + static_cast<size_t>(i) * ldc;
    for (int j = 0; j < N; ++j) c[j] = beta == 0.0f ? 0.0f : beta * c[j];
  }
}

// fp32 -> bf16 -> fp32 as VCVTNE2PS2BF16 rounds: nearest even, NaN quieted, denormals to zero.
float round_to_bf16(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
    u = (u | 0x00400000u) & 0xffff0000u;
  } else if ((u & 0x7f800000u) == 0) {
    u &= 0x80000000u;
  } else {
    u += 0x7fffu + ((u >> 16) & 1u);
    u &= 0xffff0000u;
  }
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The reference for processors without AVX512-BF16: same roundings, products summed in fp32
// in k order (the kernel sums pairs, so the last bits may differ).
void sgemm_bf16_scalar(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                       int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < K; ++k) {
        const float a =
            trans_a ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k];
        const float b =
            trans_b ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j];
        sum += round_to_bf16(a) * round_to_bf16(b);
      }
      float* c = C + static_cast<size_t>(i) * ldc + j;
      *c = beta == 0.0f ? alpha * sum : alpha * sum + beta * *c;
    }
  }
}

#if PLEXUS_BF16_GEMM_KERNEL

#define PLEXUS_BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512bf16")))

constexpr int kMR = 14;    // rows of the microkernel
constexpr int kNR = 32;    // columns of the microkernel (two zmm)
constexpr int kKC = 256;   // k per packed block (a multiple of 32)
constexpr int kMC = 140;   // rows of op(A) per packed block (a multiple of kMR)
constexpr int kNC = 1024;  // columns of op(B) per packed block (a multiple of kNR)

// A per-thread 64-byte-aligned buffer of 32-bit words that only grows.
struct PackBuffer {
  struct Free {
    void operator()(uint32_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint32_t[], Free> data;
  size_t words = 0;

  uint32_t* get(size_t need) {
    if (need > words) {
      const size_t bytes = (need * sizeof(uint32_t) + 63) / 64 * 64;
      data.reset(static_cast<uint32_t*>(std::aligned_alloc(64, bytes)));
      if (!data) std::abort();
      words = bytes / sizeof(uint32_t);
    }
    return data.get();
  }
};

inline __mmask16 lanes(int n) {  // the first n (clamped to 0..16) of 16 lanes
  return n >= 16 ? static_cast<__mmask16>(0xffff)
                 : static_cast<__mmask16>(n <= 0 ? 0 : (1u << n) - 1);
}

// 16 x 16 transpose of 32-bit elements: r[l] lane c -> r[c] lane l.
PLEXUS_BF16_TARGET inline void transpose16(__m512i r[16]) {
  __m512i t[16];
  for (int j = 0; j < 8; ++j) {  // pairs of rows, within each 128-bit lane
    t[2 * j] = _mm512_unpacklo_epi32(r[2 * j], r[2 * j + 1]);
    t[2 * j + 1] = _mm512_unpackhi_epi32(r[2 * j], r[2 * j + 1]);
  }
  __m512i v[4][4];  // v[g][c]: 128-bit lane L holds rows 4g..4g+3 of column 4L + c
  for (int g = 0; g < 4; ++g) {
    v[g][0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    v[g][1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    v[g][2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    v[g][3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int c = 0; c < 4; ++c) {
    const __m512i x0 = _mm512_shuffle_i32x4(v[0][c], v[1][c], 0x44);
    const __m512i x1 = _mm512_shuffle_i32x4(v[0][c], v[1][c], 0xee);
    const __m512i y0 = _mm512_shuffle_i32x4(v[2][c], v[3][c], 0x44);
    const __m512i y1 = _mm512_shuffle_i32x4(v[2][c], v[3][c], 0xee);
    r[c] = _mm512_shuffle_i32x4(x0, y0, 0x88);
    r[4 + c] = _mm512_shuffle_i32x4(x0, y0, 0xdd);
    r[8 + c] = _mm512_shuffle_i32x4(x1, y1, 0x88);
    r[12 + c] = _mm512_shuffle_i32x4(x1, y1, 0xdd);
  }
}

// Packs `lines` (<= 16) lines whose k is contiguous (line l starts at src + l * ld, k from 0 to
// kc) into pairs: dst[p * dst_stride + l] = (bf16 x[l][2p], bf16 x[l][2p+1]) for the
// (kc + 1) / 2 pairs, stored under `store` (lanes past `lines` hold zero).
PLEXUS_BF16_TARGET void pack_lines_along_k(const float* src, int ld, int lines, int kc,
                                           uint32_t* dst, int dst_stride, __mmask16 store) {
  for (int k0 = 0; k0 < kc; k0 += 32) {
    const __mmask16 lo = lanes(kc - k0), hi = lanes(kc - k0 - 16);
    __m512i r[16];
    for (int l = 0; l < 16; ++l) {
      if (l < lines) {
        const float* x = src + static_cast<size_t>(l) * ld + k0;
        r[l] = (__m512i)_mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(hi, x + 16),
                                            _mm512_maskz_loadu_ps(lo, x));
      } else {
        r[l] = _mm512_setzero_si512();
      }
    }
    transpose16(r);
    const int pairs = kc - k0 >= 32 ? 16 : (kc - k0 + 1) / 2;
    uint32_t* d = dst + static_cast<size_t>(k0 / 2) * dst_stride;
    for (int p = 0; p < pairs; ++p) _mm512_mask_storeu_epi32(d + p * dst_stride, store, r[p]);
  }
}

// Packs k rows of `width` (<= 16) contiguous lanes (row k at src + k * ld) into pairs:
// dst[p * dst_stride + n] = (bf16 x[2p][n], bf16 x[2p+1][n]) for the (kc + 1) / 2 pairs, stored
// under `store` (lanes past `width` hold zero; an odd kc pairs its last row with zero).
PLEXUS_BF16_TARGET void pack_lines_along_lanes(const float* src, int ld, int width, int kc,
                                               uint32_t* dst, int dst_stride, __mmask16 store) {
  // word 2n <- word n (row k), word 2n + 1 <- word 16 + n (row k + 1)
  alignas(64) static constexpr uint16_t kInterleave[32] = {
      0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i perm = _mm512_load_si512(kInterleave);
  const __mmask16 in = lanes(width);
  for (int k = 0; k < kc; k += 2) {
    const float* x = src + static_cast<size_t>(k) * ld;
    const __m512 row0 = _mm512_maskz_loadu_ps(in, x);
    const __m512 row1 = k + 1 < kc ? _mm512_maskz_loadu_ps(in, x + ld) : _mm512_setzero_ps();
    const __m512i words = (__m512i)_mm512_cvtne2ps_pbh(row1, row0);
    _mm512_mask_storeu_epi32(dst + static_cast<size_t>(k / 2) * dst_stride, store,
                             _mm512_permutexvar_epi16(perm, words));
  }
}

// The packed op(A) micro-panel of rows [i0, i0 + mr), k in [k0, k0 + kc): [(kc+1)/2][mr].
PLEXUS_BF16_TARGET void pack_a(bool trans_a, const float* A, int lda, int i0, int mr, int k0,
                               int kc, uint32_t* dst) {
  const __mmask16 store = lanes(mr);
  if (trans_a) {  // op(A)[i][k] = A[k][i]: rows of A run along i
    pack_lines_along_lanes(A + static_cast<size_t>(k0) * lda + i0, lda, mr, kc, dst, mr, store);
  } else {
    pack_lines_along_k(A + static_cast<size_t>(i0) * lda + k0, lda, mr, kc, dst, mr, store);
  }
}

// The packed op(B) panel of columns [j0, j0 + nr) (nr <= 32), k in [k0, k0 + kc):
// [(kc+1)/2][32], columns past nr zero.
PLEXUS_BF16_TARGET void pack_b(bool trans_b, const float* B, int ldb, int j0, int nr, int k0,
                               int kc, uint32_t* dst) {
  const __mmask16 all = lanes(16);
  for (int h = 0; h < 2; ++h) {
    const int width = nr - 16 * h;
    uint32_t* d = dst + 16 * h;
    if (width <= 0) {  // a panel of 16 columns or fewer: its upper half is zero
      for (int p = 0; p < (kc + 1) / 2; ++p)
        _mm512_store_si512(d + p * kNR, _mm512_setzero_si512());
    } else if (trans_b) {  // op(B)[k][j] = B[j][k]: rows of B run along k
      pack_lines_along_k(B + static_cast<size_t>(j0 + 16 * h) * ldb + k0, ldb, width, kc, d, kNR,
                         all);
    } else {
      pack_lines_along_lanes(B + static_cast<size_t>(k0) * ldb + j0 + 16 * h, ldb, width, kc, d,
                             kNR, all);
    }
  }
}

// How the microkernel writes its tile: C = alpha * acc (kOverwrite), C = alpha * acc + beta * C
// (kScale), C += alpha * acc (kAccumulate).
enum class Store { kOverwrite, kScale, kAccumulate };

// C[0..MR) x [0..ncols) (ncols <= 32, row stride ldc) from `pairs` k pairs of the packed A
// micro-panel a ([pairs][MR]) and B panel b ([pairs][32]).
template <int MR>
PLEXUS_BF16_TARGET void microkernel(int pairs, const uint32_t* a, const uint32_t* b, float* C,
                                    int ldc, int ncols, float alpha, float beta, Store store) {
  __m512 acc0[MR], acc1[MR];
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  for (int p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_load_si512(b);
    const __m512bh b1 = (__m512bh)_mm512_load_si512(b + 16);
#pragma GCC unroll 16
    for (int i = 0; i < MR; ++i) {
      const __m512bh ai = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[i]));
      acc0[i] = _mm512_dpbf16_ps(acc0[i], ai, b0);
      acc1[i] = _mm512_dpbf16_ps(acc1[i], ai, b1);
    }
    a += MR;
    b += kNR;
  }
  const __mmask16 m0 = lanes(ncols), m1 = lanes(ncols - 16);
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 16
  for (int i = 0; i < MR; ++i) {
    float* c = C + static_cast<size_t>(i) * ldc;
    __m512 r0 = _mm512_mul_ps(va, acc0[i]), r1 = _mm512_mul_ps(va, acc1[i]);
    if (store == Store::kScale) {
      r0 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m0, c), r0);
      r1 = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(m1, c + 16), r1);
    } else if (store == Store::kAccumulate) {
      r0 = _mm512_add_ps(_mm512_maskz_loadu_ps(m0, c), r0);
      r1 = _mm512_add_ps(_mm512_maskz_loadu_ps(m1, c + 16), r1);
    }
    _mm512_mask_storeu_ps(c, m0, r0);
    _mm512_mask_storeu_ps(c + 16, m1, r1);
  }
}

using Microkernel = void (*)(int, const uint32_t*, const uint32_t*, float*, int, int, float, float,
                             Store);

template <int... R>
constexpr auto make_kernels(std::integer_sequence<int, R...>) {
  return std::array<Microkernel, sizeof...(R)>{&microkernel<R + 1>...};
}
// kKernels[mr - 1]: the microkernel of mr rows.
constexpr auto kKernels = make_kernels(std::make_integer_sequence<int, kMR>{});

PLEXUS_BF16_TARGET void sgemm_bf16_avx512(bool trans_a, bool trans_b, int M, int N, int K,
                                          float alpha, const float* A, int lda, const float* B,
                                          int ldb, float beta, float* C, int ldc) {
  thread_local PackBuffer a_buffer, b_buffer;
  const int kc_max = K < kKC ? K : kKC;
  const size_t pairs_max = static_cast<size_t>(kc_max + 1) / 2;
  const int nc_max = N < kNC ? N : kNC;
  uint32_t* bp = b_buffer.get(pairs_max * ((nc_max + kNR - 1) / kNR) * kNR);
  uint32_t* ap = a_buffer.get(pairs_max * (M < kMC ? M : kMC));
  for (int jc = 0; jc < N; jc += kNC) {
    const int nc = N - jc < kNC ? N - jc : kNC;
    for (int pc = 0; pc < K; pc += kKC) {
      const int kc = K - pc < kKC ? K - pc : kKC;
      const int pairs = (kc + 1) / 2;
      for (int jr = 0; jr < nc; jr += kNR) {
        pack_b(trans_b, B, ldb, jc + jr, nc - jr < kNR ? nc - jr : kNR, pc, kc,
               bp + static_cast<size_t>(jr) * pairs);
      }
      const Store store =
          pc > 0 ? Store::kAccumulate : (beta == 0.0f ? Store::kOverwrite : Store::kScale);
      for (int ic = 0; ic < M; ic += kMC) {
        const int mc = M - ic < kMC ? M - ic : kMC;
        for (int ir = 0; ir < mc; ir += kMR) {
          pack_a(trans_a, A, lda, ic + ir, mc - ir < kMR ? mc - ir : kMR, pc, kc,
                 ap + static_cast<size_t>(ir) * pairs);
        }
        for (int jr = 0; jr < nc; jr += kNR) {
          const uint32_t* b = bp + static_cast<size_t>(jr) * pairs;
          const int ncols = nc - jr < kNR ? nc - jr : kNR;
          for (int ir = 0; ir < mc; ir += kMR) {
            const int mr = mc - ir < kMR ? mc - ir : kMR;
            float* c = C + static_cast<size_t>(ic + ir) * ldc + jc + jr;
            kKernels[mr - 1](pairs, ap + static_cast<size_t>(ir) * pairs, b, c, ldc, ncols, alpha,
                             beta, store);
          }
        }
      }
    }
  }
}

#endif  // PLEXUS_BF16_GEMM_KERNEL

}  // namespace

bool cpu_bf16_gemm_supported() {
#if PLEXUS_BF16_GEMM_KERNEL
  static const bool supported = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bf16");
  }();
  return supported;
#else
  return false;
#endif
}

void sgemm_bf16(bool trans_a, bool trans_b, int M, int N, int K, float alpha, const float* A,
                int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0 || alpha == 0.0f) return scale_c(M, N, beta, C, ldc);
#if PLEXUS_BF16_GEMM_KERNEL
  if (cpu_bf16_gemm_supported()) {
    return sgemm_bf16_avx512(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  }
#endif
  sgemm_bf16_scalar(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
}

}  // namespace plexus::engine
