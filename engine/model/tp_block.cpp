// tp_block.cpp - the Megatron-LM tensor-parallel transformer block (see tp_block.h), on the
// layers in layers/. The steps mirror Gpt::forward / Gpt::backward block for block, with the
// local widths and the "f" / "g" allreduces inserted.
#include "engine/model/tp_block.h"

#include "engine/memory/compute_fill.h"
#include "engine/model/carver.h"
#include "engine/model/layers/attention.h"
#include "engine/model/layers/gelu.h"
#include "engine/model/layers/layernorm.h"
#include "engine/model/layers/matmul.h"
#include "engine/model/layers/residual.h"

namespace plexus::engine {

namespace {

// The local widths of one tensor rank.
struct Local {
  int C, Cl, NHl;  // full width, this rank's attention width (C/tp), its heads (NH/tp)
  Local(const TpBlockDims& d, int tp_degree)
      : C(d.C), Cl(d.C / tp_degree), NHl(d.NH / tp_degree) {}
};

// Row-parallel linear layer: out (B,T,OC) = inp (B,T,Cin_local) x W_local^T, summed over the
// tensor ranks ("g"), plus the replicated bias. With degree 1 the bias goes into the sgemm as
// in matmul_forward, so the operations are Gpt's.
void row_parallel_forward(float* out, const float* inp, const float* weight, const float* bias,
                          int B, int T, int Cin, int OC, const TpGroup& tp) {
  if (tp.degree == 1) {
    matmul_forward(out, inp, weight, bias, B, T, Cin, OC);
    return;
  }
  matmul_forward(out, inp, weight, nullptr, B, T, Cin, OC);
  const size_t rows = static_cast<size_t>(B) * T;
  tp.sum(out, rows * OC);
  for (size_t r = 0; r < rows; ++r) {
    float* o = out + r * OC;
    for (int j = 0; j < OC; ++j) o[j] += bias[j];
  }
}


TpBlockActs carve_acts(Carver& c, const TpBlockDims& d, int tp_degree) {
  const Local l(d, tp_degree);
  const size_t BT = d.rows(), C = l.C, Cl = l.Cl;
  const size_t att = static_cast<size_t>(d.B) * l.NHl * d.T * d.T;
  TpBlockActs a{};
  a.ln1 = c.take(BT * C), a.ln1_mean = c.take(BT), a.ln1_rstd = c.take(BT);
  a.qkv = c.take(BT * 3 * Cl), a.atty = c.take(BT * Cl), a.att = c.take(att);
  a.attproj = c.take(BT * C), a.res2 = c.take(BT * C);
  a.ln2 = c.take(BT * C), a.ln2_mean = c.take(BT), a.ln2_rstd = c.take(BT);
  a.fch = c.take(BT * 4 * Cl), a.fch_gelu = c.take(BT * 4 * Cl);
  a.fcproj = c.take(BT * C), a.res3 = c.take(BT * C);
  return a;
}

TpBlockScratch carve_scratch(Carver& c, const TpBlockDims& d, int tp_degree) {
  const Local l(d, tp_degree);
  const size_t BT = d.rows(), C = l.C, Cl = l.Cl;
  TpBlockScratch s{};
  s.dln1 = c.take(BT * C), s.dqkv = c.take(BT * 3 * Cl), s.datty = c.take(BT * Cl);
  s.dattproj = c.take(BT * C), s.dln2 = c.take(BT * C), s.dfch = c.take(BT * 4 * Cl);
  s.dfch_gelu = c.take(BT * 4 * Cl), s.dfcproj = c.take(BT * C);
  s.att = c.take(static_cast<size_t>(d.T) * d.T);
  return s;
}

}  // namespace

size_t tp_block_acts_floats(const TpBlockDims& d, int tp_degree) {
  Carver c(nullptr);
  carve_acts(c, d, tp_degree);
  return c.used();
}

TpBlockActs tp_block_acts_at(float* base, const TpBlockDims& d, int tp_degree) {
  Carver c(base);
  return carve_acts(c, d, tp_degree);
}

size_t tp_block_scratch_floats(const TpBlockDims& d, int tp_degree) {
  Carver c(nullptr);
  carve_scratch(c, d, tp_degree);
  return c.used();
}

TpBlockScratch tp_block_scratch_at(float* base, const TpBlockDims& d, int tp_degree) {
  Carver c(base);
  return carve_scratch(c, d, tp_degree);
}

void tp_block_forward(const TpBlockActs& a, const float* x, const float* P,
                      const TpBlockOffsets& o, const TpBlockDims& d, const TpGroup& tp) {
  const Local l(d, tp.degree);
  const int B = d.B, T = d.T, C = l.C, Cl = l.Cl;
  const size_t BTC = d.rows() * C;
  layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, P + o.ln1_w, P + o.ln1_b, B, T, C);
  matmul_forward(a.qkv, a.ln1, P + o.qkv_w, P + o.qkv_b, B, T, C, 3 * Cl);
  attention_forward(a.atty, a.att, a.qkv, B, T, Cl, l.NHl);
  row_parallel_forward(a.attproj, a.atty, P + o.proj_w, P + o.proj_b, B, T, Cl, C, tp);
  residual_forward(a.res2, x, a.attproj, BTC);
  layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, P + o.ln2_w, P + o.ln2_b, B, T, C);
  matmul_forward(a.fch, a.ln2, P + o.fc_w, P + o.fc_b, B, T, C, 4 * Cl);
  gelu_forward(a.fch_gelu, a.fch, d.rows() * 4 * Cl);
  row_parallel_forward(a.fcproj, a.fch_gelu, P + o.fcproj_w, P + o.fcproj_b, B, T, 4 * Cl, C,
                       tp);
  residual_forward(a.res3, a.res2, a.fcproj, BTC);
}

void tp_block_backward(float* dx, float* dres2, const TpBlockScratch& s, const float* dout,
                       const float* x, const TpBlockActs& a, const float* P, float* G,
                       const TpBlockOffsets& o, const TpBlockDims& d, const TpGroup& tp) {
  const Local l(d, tp.degree);
  const int B = d.B, T = d.T, C = l.C, Cl = l.Cl;
  const size_t BT = d.rows(), BTC = BT * C;
  compute_fill(s.dln1, BTC, 0.0f);
  compute_fill(s.dqkv, BT * 3 * Cl, 0.0f);
  compute_fill(s.datty, BT * Cl, 0.0f);
  compute_fill(s.dattproj, BTC, 0.0f);
  compute_fill(s.dln2, BTC, 0.0f);
  compute_fill(s.dfch, BT * 4 * Cl, 0.0f);
  compute_fill(s.dfch_gelu, BT * 4 * Cl, 0.0f);
  compute_fill(s.dfcproj, BTC, 0.0f);

  // MLP: res3 = res2 + proj(gelu(fc(ln2(res2))))
  residual_backward(dres2, s.dfcproj, dout, BTC);
  matmul_backward(s.dfch_gelu, G + o.fcproj_w, G + o.fcproj_b, s.dfcproj, a.fch_gelu,
                  P + o.fcproj_w, B, T, 4 * Cl, C);
  gelu_backward(s.dfch, a.fch, s.dfch_gelu, BT * 4 * Cl);
  matmul_backward(s.dln2, G + o.fc_w, G + o.fc_b, s.dfch, a.ln2, P + o.fc_w, B, T, C, 4 * Cl);
  tp.sum(s.dln2, BTC);  // "f"
  layernorm_backward(dres2, G + o.ln2_w, G + o.ln2_b, s.dln2, a.res2, P + o.ln2_w, a.ln2_mean,
                     a.ln2_rstd, B, T, C);

  // attention: res2 = x + proj(attention(qkv(ln1(x))))
  residual_backward(dx, s.dattproj, dres2, BTC);
  matmul_backward(s.datty, G + o.proj_w, G + o.proj_b, s.dattproj, a.atty, P + o.proj_w, B, T,
                  Cl, C);
  attention_backward(s.dqkv, s.att, s.datty, a.qkv, a.att, B, T, Cl, l.NHl);
  matmul_backward(s.dln1, G + o.qkv_w, G + o.qkv_b, s.dqkv, a.ln1, P + o.qkv_w, B, T, C,
                  3 * Cl);
  tp.sum(s.dln1, BTC);  // "f"
  layernorm_backward(dx, G + o.ln1_w, G + o.ln1_b, s.dln1, x, P + o.ln1_w, a.ln1_mean,
                     a.ln1_rstd, B, T, C);
}

}  // namespace plexus::engine
