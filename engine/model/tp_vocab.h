// tp_vocab.h - the vocabulary-parallel token embedding and cross-entropy of Megatron-LM
// (Shoeybi et al. 2019, section 3, "input embedding" and the fused cross-entropy).
//
// The vocabulary is padded to Vp, a multiple of the tensor degree; rank r holds wte rows
// [vocab_begin, vocab_begin + Vp/tp). Of those, the first `valid` are real tokens and the rest
// padding (zero rows, never a target, left out of the softmax as if their logit were -inf).
//
//   embedding:     out = (wte row if the token is local, else 0), sum-allreduced, + wpe[t]
//   cross-entropy: m = allreduce_max(local max logit); s = allreduce_sum(local sum exp(z - m));
//                  z_t = allreduce_sum(target logit if local, else 0); loss = log s + m - z_t
//
// Wire traffic: the embedding sums (B,T,C) floats; the loss takes one max of (B,T) floats and
// one sum of 2*(B,T) floats. With degree 1 all four functions run the single-process layers
// (encoder, softmax_crossentropy), so results are bit-identical to Gpt's, and they run on the
// compute device (engine/device/compute.h). With degree > 1 the loops here run on the host,
// around the host collectives, reading managed memory on cuda.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/model/tp_ops.h"

namespace plexus::engine {

// This rank's slice of the (padded) vocabulary.
struct VocabSlice {
  int begin = 0;  // first global token id held
  int rows = 0;   // local rows, Vp / tp (including padding)
  int valid = 0;  // real tokens among them: min(rows, max(0, V - begin))
};

// out (B,T,C) = wte[tokens] + wpe[0:T] with wte split by rows. wte: (rows, C) local; wpe
// (maxT, C) replicated. Tokens must be in [0, V). Overwrites out.
void tp_embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                          const VocabSlice& vocab, int B, int T, int C, const TpGroup& tp);

// Accumulates (+=) dout (B,T,C) into the local wte rows of the tokens held here and into wpe
// rows 0..T-1 (dout is the same on every tensor rank, so wpe's gradient is too).
void tp_embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                           const VocabSlice& vocab, int B, int T, int C, const TpGroup& tp);

// logits (B,T,rows): this rank's columns. Writes probs (B,T,rows) (the global softmax's local
// columns, 0 on padding) and losses (B,T) (0 where target < 0). stats: 3*B*T floats of
// workspace. Returns the number of positions with a target. Targets must be < V.
size_t tp_crossentropy_forward(float* losses, float* probs, float* stats, const float* logits,
                               const int32_t* targets, const VocabSlice& vocab, int B, int T,
                               const TpGroup& tp);

// Accumulates (+=) dloss * (probs - onehot(target)) into dlogits (B,T,rows), the one-hot only
// where the target is local; nothing at positions with target < 0.
void tp_crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                              float dloss, const VocabSlice& vocab, int B, int T,
                              const TpGroup& tp);

}  // namespace plexus::engine
