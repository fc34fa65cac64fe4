// tp_block.h - one GPT-2 transformer block split across tensor ranks, Megatron-LM style
// (Shoeybi et al. 2019, section 3):
//
//   x    -> ln1 -f-> qkv (column-parallel) -> attention -> proj (row-parallel) -g-> +b -> +x
//        = res2
//   res2 -> ln2 -f-> fc (column-parallel) -> gelu -> proj (row-parallel) -g-> +b -> +res2
//        = res3
//
// "g" sum-allreduces the row-parallel partial outputs in the forward pass (the bias, replicated,
// is added after it); "f" sum-allreduces the gradient of each column-parallel input (the
// LayerNorm output) in the backward pass. Everything else is local: each rank holds NH/tp heads
// (Cl = C/tp columns of q, k, v and of the attention output) and 4C/tp hidden MLP units. Two
// allreduces of (B,T,C) floats per block in each direction.
//
// With degree 1 the block runs exactly Gpt's operations in Gpt's order (bit-identical results).
#pragma once

#include <cstddef>

#include "engine/model/tp_ops.h"

namespace plexus::engine {

// Element offsets of one block's local tensors in the shard's flat buffer (shapes local:
// qkv_w (3Cl,C), qkv_b (3Cl), proj_w (C,Cl), fc_w (4Cl,C), fc_b (4Cl), fcproj_w (C,4Cl); the
// LayerNorms and the two row-parallel biases (C) whole).
struct TpBlockOffsets {
  size_t ln1_w, ln1_b, qkv_w, qkv_b, proj_w, proj_b;
  size_t ln2_w, ln2_b, fc_w, fc_b, fcproj_w, fcproj_b;
};

// Forward activations of one block, kept for the backward. (B,T,C): ln1, attproj, res2, ln2,
// fcproj, res3; (B,T): the means and rstds; (B,T,3Cl) qkv; (B,T,Cl) atty; (B,NH/tp,T,T) att;
// (B,T,4Cl) fch and fch_gelu.
struct TpBlockActs {
  float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *attproj, *res2;
  float *ln2, *ln2_mean, *ln2_rstd, *fch, *fch_gelu, *fcproj, *res3;
};

// Gradient workspace of one block, overwritten by each backward: dln1, dattproj, dln2, dfcproj
// (B,T,C); dqkv (B,T,3Cl); datty (B,T,Cl); dfch, dfch_gelu (B,T,4Cl); att (T,T).
struct TpBlockScratch {
  float *dln1, *dqkv, *datty, *dattproj, *dln2, *dfch, *dfch_gelu, *dfcproj, *att;
};

// The sizes of a block on one tensor rank.
struct TpBlockDims {
  int B, T, C, NH;  // full model width and heads; NH % tp.degree == 0
  size_t rows() const { return static_cast<size_t>(B) * T; }
};

// How many floats a TpBlockActs / TpBlockScratch needs, and carving them from a buffer.
size_t tp_block_acts_floats(const TpBlockDims& d, int tp_degree);
TpBlockActs tp_block_acts_at(float* base, const TpBlockDims& d, int tp_degree);
size_t tp_block_scratch_floats(const TpBlockDims& d, int tp_degree);
TpBlockScratch tp_block_scratch_at(float* base, const TpBlockDims& d, int tp_degree);

// a = the block's activations for input x (B,T,C); a.res3 is its output. P: the shard's params.
void tp_block_forward(const TpBlockActs& a, const float* x, const float* P,
                      const TpBlockOffsets& o, const TpBlockDims& d, const TpGroup& tp);

// Given dout (B,T,C), the gradient of the block's output res3: accumulates (+=) the parameter
// gradients into G and the input gradient into dx (B,T,C); dres2 (B,T,C) must be zero on entry
// (it holds the mid-block residual's gradient afterwards). x and a are the forward's.
void tp_block_backward(float* dx, float* dres2, const TpBlockScratch& s, const float* dout,
                       const float* x, const TpBlockActs& a, const float* P, float* G,
                       const TpBlockOffsets& o, const TpBlockDims& d, const TpGroup& tp);

}  // namespace plexus::engine
