// cuda_layers_test.cpp - every function of engine/device/cuda_layers.h against the CPU layer
// it mirrors (engine/model/layers, adamw, grad_clip), on the same random inputs (fixed seeds).
//
// The CPU reference runs with the CPU device selected (compute.h: this test never calls
// select_compute_device, it calls cuda::use_device and the cuda:: functions directly), on
// std::vector memory; the GPU runs on managed copies. Accumulating outputs (dinp, dweight,
// dbias, dwte, ...) start at the same non-zero values on both sides, so += is checked too.
//
// Tolerances: |gpu - cpu| <= atol + rtol |cpu| per element, from the arithmetic each side does:
//   element-wise (residual, gelu, encoder forward, adamw, scale, fill, cross-entropy backward):
//     rtol 1e-5. GELU adds atol 2e-6 (forward) / 1e-5 (backward): the CPU's rational tanh is
//     within 3.3e-7 of tanhf, times |x|/2 <= 2 and the derivative's 0.5 x du/dx <= 5.
//   reductions in another order (layernorm, softmax, encoder/matmul/layernorm parameter
//     gradients, cross-entropy): rtol 1e-4, atol 1e-5 (float sums over <= 4096 terms of O(1)).
//   GEMM-based (matmul, attention): rtol 1e-4, atol 1e-4 (fp32 products over K <= 768 terms of
//     O(1) inputs; cuBLAS sums in another order than OpenBLAS).
//   sum_squares: rtol 1e-10: both sum in double (the CPU's sequential sum of 2^24 terms is
//     off by ~3e-13 relative; a float accumulator would be off by ~1e-4).
//   bf16 autocast GEMM: each product of two inputs rounded to bf16 (8 significant bits, unit
//     roundoff 2^-8) is off by at most 2^-7 of |a||b|, so |gpu - cpu| <= 2^-7 (|A| |B|)_ij
//     + 1e-4, with |A||B| computed by the CPU layer on absolute values.
// Shapes: one small case (counts not multiples of a warp or block) and one larger one; the
// element-wise functions also run at 2^24 + 7 elements, past one grid of 65535 x 256 threads.
// Without a GPU every test skips with the reason (PLX_REQUIRE_GPU).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/device/compute.h"
#include "engine/device/cuda_layers.h"
#include "engine/model/layers/attention.h"
#include "engine/model/layers/encoder.h"
#include "engine/model/layers/gelu.h"
#include "engine/model/layers/layernorm.h"
#include "engine/model/layers/matmul.h"
#include "engine/model/layers/residual.h"
#include "engine/model/layers/softmax_crossentropy.h"
#include "engine/model/rng.h"
#include "engine/optim/adamw.h"
#include "engine/optim/grad_clip.h"
#include "tests/support/gpu_available.h"

namespace plexus::engine {
namespace {

struct Shape {
  int B, T, C, NH, OC, V;
};
// small: nothing a multiple of 32; large: GPT-2-like widths, T past one warp of columns
constexpr Shape kSmall{2, 5, 12, 3, 20, 37};
constexpr Shape kLarge{4, 67, 192, 6, 768, 4099};
constexpr size_t kHuge = (size_t{1} << 24) + 7;  // past 65535 blocks x 256 threads

struct Tolerance {
  double rtol, atol;
};
constexpr Tolerance kElementwise{1e-5, 0.0};
constexpr Tolerance kReduction{1e-4, 1e-5};
constexpr Tolerance kGemm{1e-4, 1e-4};

std::vector<float> random_vector(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * static_cast<float>(rng.uniform_open0());
  return v;
}

// A managed copy of a host vector; vec() reads it back (the cuda:: calls have synchronized).
template <class T>
class Managed {
 public:
  explicit Managed(const std::vector<T>& host)
      : n_(host.size()), ptr_(static_cast<T*>(cuda::alloc_managed(n_ * sizeof(T)))) {
    if (n_ > 0) std::memcpy(ptr_, host.data(), n_ * sizeof(T));
  }
  explicit Managed(size_t n) : Managed(std::vector<T>(n)) {}
  Managed(const Managed&) = delete;
  Managed& operator=(const Managed&) = delete;
  ~Managed() { cuda::free_managed(ptr_); }
  T* get() { return ptr_; }
  std::vector<T> vec() const { return std::vector<T>(ptr_, ptr_ + n_); }

 private:
  size_t n_;
  T* ptr_;
};

// The GPU (ordinal 0) with fp32 or bf16-autocast GEMMs; the CPU stays the selected device.
void use_gpu(bool bf16_gemms) {
  ASSERT_EQ(cuda::use_device(0, bf16_gemms), "");
  ASSERT_EQ(compute_device(), ComputeDevice::kCpu);
}

// Element-wise comparison; reports the first few mismatches by index and the count.
void expect_close(const std::vector<float>& gpu, const std::vector<float>& cpu, Tolerance tol,
                  const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    const double bound = tol.atol + tol.rtol * std::fabs(cpu[i]);
    if (std::fabs(static_cast<double>(gpu[i]) - cpu[i]) <= bound) continue;
    if (++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i]
                    << ", bound " << bound;
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": elements outside the bound, of " << cpu.size();
}

// As expect_close with a bound per element.
void expect_within(const std::vector<float>& gpu, const std::vector<float>& cpu,
                   const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < cpu.size(); ++i) {
    if (std::fabs(static_cast<double>(gpu[i]) - cpu[i]) <= bound[i]) continue;
    if (++bad <= 5) {
      ADD_FAILURE() << what << "[" << i << "]: gpu " << gpu[i] << ", cpu " << cpu[i]
                    << ", bound " << bound[i];
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": elements outside the bound, of " << cpu.size();
}

std::string name(const char* what, const Shape& s) {
  return std::string(what) + " (B " + std::to_string(s.B) + ", T " + std::to_string(s.T) +
         ", C " + std::to_string(s.C) + ")";
}

// ---- encoder ------------------------------------------------------------------------------

void check_encoder(const Shape& s) {
  const size_t BT = static_cast<size_t>(s.B) * s.T, C = s.C;
  std::vector<int32_t> tokens(BT);
  SplitMix64 rng(100);
  for (auto& t : tokens) t = static_cast<int32_t>(rng.next() % 7);  // few ids: many repeats
  const auto wte = random_vector(7 * C, 101), wpe = random_vector(s.T * C, 102);
  const auto dout = random_vector(BT * C, 103);
  auto dwte = random_vector(7 * C, 104), dwpe = random_vector(s.T * C, 105);
  std::vector<float> out(BT * C);
  Managed<int32_t> g_tokens(tokens);
  Managed<float> g_wte(wte), g_wpe(wpe), g_dout(dout), g_dwte(dwte), g_dwpe(dwpe), g_out(BT * C);

  encoder_forward(out.data(), tokens.data(), wte.data(), wpe.data(), s.B, s.T, s.C);
  cuda::encoder_forward(g_out.get(), g_tokens.get(), g_wte.get(), g_wpe.get(), s.B, s.T, s.C);
  expect_close(g_out.vec(), out, kElementwise, name("encoder out", s));

  encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), s.B, s.T, s.C);
  cuda::encoder_backward(g_dwte.get(), g_dwpe.get(), g_dout.get(), g_tokens.get(), s.B, s.T, s.C);
  expect_close(g_dwte.vec(), dwte, kReduction, name("encoder dwte", s));
  expect_close(g_dwpe.vec(), dwpe, kReduction, name("encoder dwpe", s));
}

TEST(CudaLayers, EncoderMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  check_encoder(kSmall);
  check_encoder(kLarge);
}

// ---- layernorm ----------------------------------------------------------------------------

void check_layernorm(const Shape& s) {
  const size_t BT = static_cast<size_t>(s.B) * s.T, C = s.C;
  const auto inp = random_vector(BT * C, 200, -3.0f, 5.0f);
  const auto weight = random_vector(C, 201, 0.5f, 1.5f), bias = random_vector(C, 202);
  const auto dout = random_vector(BT * C, 203);
  auto dinp = random_vector(BT * C, 204), dweight = random_vector(C, 205);
  auto dbias = random_vector(C, 206);
  std::vector<float> out(BT * C), mean(BT), rstd(BT);
  Managed<float> g_inp(inp), g_weight(weight), g_bias(bias), g_dout(dout), g_dinp(dinp);
  Managed<float> g_dweight(dweight), g_dbias(dbias), g_out(BT * C), g_mean(BT), g_rstd(BT);

  layernorm_forward(out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(),
                    s.B, s.T, s.C);
  cuda::layernorm_forward(g_out.get(), g_mean.get(), g_rstd.get(), g_inp.get(), g_weight.get(),
                          g_bias.get(), s.B, s.T, s.C);
  expect_close(g_out.vec(), out, kReduction, name("layernorm out", s));
  expect_close(g_mean.vec(), mean, kReduction, name("layernorm mean", s));
  expect_close(g_rstd.vec(), rstd, kReduction, name("layernorm rstd", s));

  // both backwards from the CPU's mean and rstd, so only the backward is compared
  Managed<float> c_mean(mean), c_rstd(rstd);
  layernorm_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                     weight.data(), mean.data(), rstd.data(), s.B, s.T, s.C);
  cuda::layernorm_backward(g_dinp.get(), g_dweight.get(), g_dbias.get(), g_dout.get(),
                           g_inp.get(), g_weight.get(), c_mean.get(), c_rstd.get(), s.B, s.T,
                           s.C);
  expect_close(g_dinp.vec(), dinp, kReduction, name("layernorm dinp", s));
  expect_close(g_dweight.vec(), dweight, kReduction, name("layernorm dweight", s));
  expect_close(g_dbias.vec(), dbias, kReduction, name("layernorm dbias", s));
}

TEST(CudaLayers, LayerNormMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  check_layernorm(kSmall);
  check_layernorm(kLarge);
}

// ---- matmul -------------------------------------------------------------------------------

struct MatmulCase {
  std::vector<float> inp, weight, bias, dout, dinp, dweight, dbias;
};

MatmulCase matmul_case(const Shape& s, uint64_t seed) {
  const size_t BT = static_cast<size_t>(s.B) * s.T;
  MatmulCase m;
  m.inp = random_vector(BT * s.C, seed);
  m.weight = random_vector(static_cast<size_t>(s.OC) * s.C, seed + 1);
  m.bias = random_vector(s.OC, seed + 2);
  m.dout = random_vector(BT * s.OC, seed + 3);
  m.dinp = random_vector(BT * s.C, seed + 4);
  m.dweight = random_vector(static_cast<size_t>(s.OC) * s.C, seed + 5);
  m.dbias = random_vector(s.OC, seed + 6);
  return m;
}

void check_matmul(const Shape& s, bool with_bias) {
  const size_t BT = static_cast<size_t>(s.B) * s.T;
  MatmulCase m = matmul_case(s, 300);
  std::vector<float> out(BT * s.OC);
  Managed<float> g_inp(m.inp), g_weight(m.weight), g_bias(m.bias), g_dout(m.dout);
  Managed<float> g_dinp(m.dinp), g_dweight(m.dweight), g_dbias(m.dbias), g_out(BT * s.OC);
  const float* bias = with_bias ? m.bias.data() : nullptr;
  const std::string tag = with_bias ? "" : " (no bias)";

  matmul_forward(out.data(), m.inp.data(), m.weight.data(), bias, s.B, s.T, s.C, s.OC);
  cuda::matmul_forward(g_out.get(), g_inp.get(), g_weight.get(),
                       with_bias ? g_bias.get() : nullptr, s.B, s.T, s.C, s.OC);
  expect_close(g_out.vec(), out, kGemm, name("matmul out", s) + tag);

  matmul_backward(m.dinp.data(), m.dweight.data(), with_bias ? m.dbias.data() : nullptr,
                  m.dout.data(), m.inp.data(), m.weight.data(), s.B, s.T, s.C, s.OC);
  cuda::matmul_backward(g_dinp.get(), g_dweight.get(), with_bias ? g_dbias.get() : nullptr,
                        g_dout.get(), g_inp.get(), g_weight.get(), s.B, s.T, s.C, s.OC);
  expect_close(g_dinp.vec(), m.dinp, kGemm, name("matmul dinp", s) + tag);
  expect_close(g_dweight.vec(), m.dweight, kGemm, name("matmul dweight", s) + tag);
  expect_close(g_dbias.vec(), m.dbias, kReduction, name("matmul dbias", s) + tag);
}

TEST(CudaLayers, MatmulMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  check_matmul(kSmall, true);
  check_matmul(kSmall, false);
  check_matmul(kLarge, true);
}

TEST(CudaLayers, MatmulWithoutDinpLeavesItAlone) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  const Shape s = kSmall;
  MatmulCase m = matmul_case(s, 310);
  Managed<float> g_inp(m.inp), g_weight(m.weight), g_dout(m.dout), g_dweight(m.dweight);
  matmul_backward(nullptr, m.dweight.data(), nullptr, m.dout.data(), m.inp.data(),
                  m.weight.data(), s.B, s.T, s.C, s.OC);
  cuda::matmul_backward(nullptr, g_dweight.get(), nullptr, g_dout.get(), g_inp.get(),
                        g_weight.get(), s.B, s.T, s.C, s.OC);
  expect_close(g_dweight.vec(), m.dweight, kGemm, "matmul dweight (no dinp, no dbias)");
}

// |A||B| products: the CPU layer on absolute values, for the bf16 bound.
std::vector<float> absolute(const std::vector<float>& v) {
  std::vector<float> a(v.size());
  for (size_t i = 0; i < v.size(); ++i) a[i] = std::fabs(v[i]);
  return a;
}

std::vector<double> bf16_bound(const std::vector<float>& abs_product) {
  std::vector<double> bound(abs_product.size());
  for (size_t i = 0; i < bound.size(); ++i) bound[i] = 0x1p-7 * abs_product[i] + 1e-4;
  return bound;
}

TEST(CudaLayers, MatmulUnderBf16AutocastWithinBf16Bound) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(true));
  const Shape s = kLarge;
  const size_t BT = static_cast<size_t>(s.B) * s.T;
  MatmulCase m = matmul_case(s, 320);
  const std::vector<float> zero_dinp(BT * s.C, 0.0f), zero_dweight(m.weight.size(), 0.0f);
  Managed<float> g_inp(m.inp), g_weight(m.weight), g_dout(m.dout), g_out(BT * s.OC);
  Managed<float> g_dinp(zero_dinp), g_dweight(zero_dweight);
  std::vector<float> out(BT * s.OC), abs_out(BT * s.OC);
  std::vector<float> dinp = zero_dinp, dweight = zero_dweight;
  std::vector<float> abs_dinp = zero_dinp, abs_dweight = zero_dweight;
  const auto a_inp = absolute(m.inp), a_weight = absolute(m.weight), a_dout = absolute(m.dout);

  matmul_forward(out.data(), m.inp.data(), m.weight.data(), nullptr, s.B, s.T, s.C, s.OC);
  matmul_forward(abs_out.data(), a_inp.data(), a_weight.data(), nullptr, s.B, s.T, s.C, s.OC);
  cuda::matmul_forward(g_out.get(), g_inp.get(), g_weight.get(), nullptr, s.B, s.T, s.C, s.OC);
  expect_within(g_out.vec(), out, bf16_bound(abs_out), "bf16 matmul out");

  matmul_backward(dinp.data(), dweight.data(), nullptr, m.dout.data(), m.inp.data(),
                  m.weight.data(), s.B, s.T, s.C, s.OC);
  matmul_backward(abs_dinp.data(), abs_dweight.data(), nullptr, a_dout.data(), a_inp.data(),
                  a_weight.data(), s.B, s.T, s.C, s.OC);
  cuda::matmul_backward(g_dinp.get(), g_dweight.get(), nullptr, g_dout.get(), g_inp.get(),
                        g_weight.get(), s.B, s.T, s.C, s.OC);
  expect_within(g_dinp.vec(), dinp, bf16_bound(abs_dinp), "bf16 matmul dinp");
  expect_within(g_dweight.vec(), dweight, bf16_bound(abs_dweight), "bf16 matmul dweight");
  // and it is not fp32: the rounding to bf16 shows somewhere (a 7-bit mantissa over K = 192)
  const auto g = g_out.vec();
  double worst = 0.0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::fabs(double(g[i]) - out[i]));
  EXPECT_GT(worst, 1e-4) << "bf16 autocast GEMM matches fp32 to 1e-4: is it really bf16?";
}

// ---- attention ----------------------------------------------------------------------------

void check_attention(const Shape& s) {
  const size_t BT = static_cast<size_t>(s.B) * s.T, C = s.C;
  const size_t att_n = static_cast<size_t>(s.B) * s.NH * s.T * s.T;
  const auto inp = random_vector(BT * 3 * C, 400, -2.0f, 2.0f);
  const auto dout = random_vector(BT * C, 401);
  auto dinp = random_vector(BT * 3 * C, 402);
  std::vector<float> out(BT * C), att(att_n), scratch(static_cast<size_t>(s.T) * s.T);
  Managed<float> g_inp(inp), g_dout(dout), g_dinp(dinp), g_out(BT * C), g_att(att_n);
  Managed<float> g_scratch(scratch.size());

  attention_forward(out.data(), att.data(), inp.data(), s.B, s.T, s.C, s.NH);
  cuda::attention_forward(g_out.get(), g_att.get(), g_inp.get(), s.B, s.T, s.C, s.NH);
  const auto g_att_host = g_att.vec();
  expect_close(g_out.vec(), out, kGemm, name("attention out", s));
  expect_close(g_att_host, att, kReduction, name("attention att", s));
  size_t nonzero_above = 0;  // row t of each (T,T) block is exactly 0 beyond column t
  for (size_t i = 0; i < att_n; ++i) {
    const size_t t = (i / s.T) % s.T, j = i % s.T;
    if (j > t && g_att_host[i] != 0.0f) ++nonzero_above;
  }
  EXPECT_EQ(nonzero_above, 0u) << name("attention att above the diagonal", s);

  // both backwards from the CPU's att
  Managed<float> c_att(att);
  attention_backward(dinp.data(), scratch.data(), dout.data(), inp.data(), att.data(), s.B, s.T,
                     s.C, s.NH);
  cuda::attention_backward(g_dinp.get(), g_scratch.get(), g_dout.get(), g_inp.get(), c_att.get(),
                           s.B, s.T, s.C, s.NH);
  expect_close(g_dinp.vec(), dinp, kGemm, name("attention dinp", s));
}

TEST(CudaLayers, AttentionMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  check_attention(kSmall);
  check_attention(kLarge);
}

TEST(CudaLayers, AttentionRejectsHeadsThatDoNotDivideC) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  Managed<float> buf(3 * 12 * 2);
  try {
    cuda::attention_forward(buf.get(), buf.get(), buf.get(), 1, 2, 12, 5);
    FAIL() << "attention_forward accepted NH 5 for C 12";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("attention_forward"), std::string::npos) << what;
    EXPECT_NE(what.find("NH 5"), std::string::npos) << what;
    EXPECT_NE(what.find("C % NH == 0"), std::string::npos) << what;
  }
}

// ---- gelu, residual -----------------------------------------------------------------------

void check_gelu(size_t n) {
  const auto inp = random_vector(n, 500, -4.0f, 4.0f), dout = random_vector(n, 501);
  auto dinp = random_vector(n, 502);
  std::vector<float> out(n);
  Managed<float> g_inp(inp), g_dout(dout), g_dinp(dinp), g_out(n);
  gelu_forward(out.data(), inp.data(), n);
  cuda::gelu_forward(g_out.get(), g_inp.get(), n);
  expect_close(g_out.vec(), out, {1e-5, 2e-6}, "gelu out, n " + std::to_string(n));
  gelu_backward(dinp.data(), inp.data(), dout.data(), n);
  cuda::gelu_backward(g_dinp.get(), g_inp.get(), g_dout.get(), n);
  expect_close(g_dinp.vec(), dinp, {1e-5, 1e-5}, "gelu dinp, n " + std::to_string(n));
}

TEST(CudaLayers, GeluMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000003}, kHuge}) check_gelu(n);
}

TEST(CudaLayers, GeluInPlace) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  auto x = random_vector(4099, 510, -4.0f, 4.0f);
  Managed<float> g_x(x);
  gelu_forward(x.data(), x.data(), x.size());
  cuda::gelu_forward(g_x.get(), g_x.get(), x.size());
  expect_close(g_x.vec(), x, {1e-5, 2e-6}, "gelu in place");
}

void check_residual(size_t n) {
  const auto a = random_vector(n, 600), b = random_vector(n, 601), dout = random_vector(n, 602);
  auto da = random_vector(n, 603), db = random_vector(n, 604);
  std::vector<float> out(n);
  Managed<float> g_a(a), g_b(b), g_dout(dout), g_da(da), g_db(db), g_out(n);
  residual_forward(out.data(), a.data(), b.data(), n);
  cuda::residual_forward(g_out.get(), g_a.get(), g_b.get(), n);
  expect_close(g_out.vec(), out, kElementwise, "residual out, n " + std::to_string(n));
  residual_backward(da.data(), db.data(), dout.data(), n);
  cuda::residual_backward(g_da.get(), g_db.get(), g_dout.get(), n);
  expect_close(g_da.vec(), da, kElementwise, "residual dinp1, n " + std::to_string(n));
  expect_close(g_db.vec(), db, kElementwise, "residual dinp2, n " + std::to_string(n));
}

TEST(CudaLayers, ResidualMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000003}, kHuge}) check_residual(n);
}

// ---- softmax + cross-entropy --------------------------------------------------------------

void check_crossentropy(const Shape& s) {
  const size_t BT = static_cast<size_t>(s.B) * s.T, V = s.V;
  auto logits = random_vector(BT * V, 700, -4.0f, 4.0f);
  logits[3] = 60.0f;  // a dominant logit: the max must be subtracted before exp
  std::vector<int32_t> targets(BT);
  SplitMix64 rng(701);
  for (size_t r = 0; r < BT; ++r) {
    targets[r] = r % 3 == 1 ? -1 : static_cast<int32_t>(rng.next() % V);  // a third ignored
  }
  targets[0] = static_cast<int32_t>(V - 1);
  auto dlogits = random_vector(BT * V, 702);
  std::vector<float> losses(BT), probs(BT * V);
  Managed<float> g_logits(logits), g_dlogits(dlogits), g_losses(BT), g_probs(BT * V);
  Managed<int32_t> g_targets(targets);

  const size_t counted = softmax_crossentropy_forward(losses.data(), probs.data(), logits.data(),
                                                      targets.data(), s.B, s.T, s.V);
  const size_t g_counted = cuda::softmax_crossentropy_forward(
      g_losses.get(), g_probs.get(), g_logits.get(), g_targets.get(), s.B, s.T, s.V);
  EXPECT_EQ(g_counted, counted) << name("cross-entropy count", s);
  expect_close(g_losses.vec(), losses, kReduction, name("cross-entropy losses", s));
  expect_close(g_probs.vec(), probs, {1e-4, 1e-9}, name("cross-entropy probs", s));

  Managed<float> c_probs(probs);  // both backwards from the CPU's probs
  const float dloss = 1.0f / static_cast<float>(counted);
  softmax_crossentropy_backward(dlogits.data(), probs.data(), targets.data(), dloss, s.B, s.T,
                                s.V);
  cuda::softmax_crossentropy_backward(g_dlogits.get(), c_probs.get(), g_targets.get(), dloss,
                                      s.B, s.T, s.V);
  expect_close(g_dlogits.vec(), dlogits, {1e-5, 1e-7}, name("cross-entropy dlogits", s));
}

TEST(CudaLayers, CrossEntropyMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  check_crossentropy(kSmall);
  check_crossentropy(kLarge);
  check_crossentropy({1, 3, 0, 1, 0, 50257});  // GPT-2's vocabulary: 98 logits a thread
}

// ---- AdamW, gradient norm -----------------------------------------------------------------

void check_adamw(size_t n, bool with_mask) {
  AdamWConfig config;
  config.lr = 3e-3f;
  config.weight_decay = 0.05f;
  auto params = random_vector(n, 800), m = random_vector(n, 801, -0.1f, 0.1f);
  auto v = random_vector(n, 802, 0.0f, 0.01f);
  const auto grads = random_vector(n, 803);
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) mask[i] = i % 3 != 0;
  Managed<float> g_params(params), g_m(m), g_v(v), g_grads(grads);
  Managed<uint8_t> g_mask(mask);
  for (int64_t step = 1; step <= 3; ++step) {
    adamw_step(params.data(), grads.data(), m.data(), v.data(), n, step, config,
               with_mask ? mask.data() : nullptr);
    cuda::adamw_step(g_params.get(), g_grads.get(), g_m.get(), g_v.get(), n, step, config.lr,
                     config.beta1, config.beta2, config.eps, config.weight_decay,
                     with_mask ? g_mask.get() : nullptr);
  }
  const std::string tag = ", n " + std::to_string(n) + (with_mask ? ", mask" : ", no mask");
  expect_close(g_params.vec(), params, {1e-5, 1e-7}, "adamw params" + tag);
  expect_close(g_m.vec(), m, {1e-5, 1e-9}, "adamw m" + tag);
  expect_close(g_v.vec(), v, {1e-5, 1e-9}, "adamw v" + tag);
}

TEST(CudaLayers, AdamWMatchesCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000003}}) check_adamw(n, true);
  check_adamw(1000003, false);
  check_adamw(kHuge, true);
}

TEST(CudaLayers, SumSquaresScaleFillMatchCpu) {
  PLX_REQUIRE_GPU();
  ASSERT_NO_FATAL_FAILURE(use_gpu(false));
  for (size_t n : {size_t{0}, size_t{1}, size_t{1000003}, kHuge}) {
    auto x = random_vector(n, 900, -3.0f, 3.0f);
    Managed<float> g_x(x);
    const double cpu = grad_sum_squares(x.data(), n);
    const double gpu = cuda::sum_squares(g_x.get(), n);
    EXPECT_NEAR(gpu, cpu, 1e-10 * cpu) << "sum_squares, n " << n;

    for (float& xi : x) xi *= 0.37f;
    cuda::scale(g_x.get(), n, 0.37f);
    expect_close(g_x.vec(), x, kElementwise, "scale, n " + std::to_string(n));

    cuda::fill(g_x.get(), n, -2.5f);
    expect_close(g_x.vec(), std::vector<float>(n, -2.5f), {0.0, 0.0},
                 "fill, n " + std::to_string(n));
  }
}

}  // namespace
}  // namespace plexus::engine
