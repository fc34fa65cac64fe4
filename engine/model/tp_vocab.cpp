// tp_vocab.cpp - vocabulary-parallel embedding and cross-entropy (see tp_vocab.h).
#include "engine/model/tp_vocab.h"

#include <cmath>

#include "engine/model/layers/encoder.h"
#include "engine/model/layers/softmax_crossentropy.h"

namespace plexus::engine {

namespace {

// The local row of a global token id, or -1 when another rank holds it (or it is padding).
inline int local_row(int32_t token, const VocabSlice& vocab) {
  const int64_t row = static_cast<int64_t>(token) - vocab.begin;
  return row >= 0 && row < vocab.valid ? static_cast<int>(row) : -1;
}

}  // namespace

void tp_embedding_forward(float* out, const int32_t* tokens, const float* wte, const float* wpe,
                          const VocabSlice& vocab, int B, int T, int C, const TpGroup& tp) {
  if (tp.degree == 1) {
    encoder_forward(out, tokens, wte, wpe, B, T, C);
    return;
  }
  const size_t rows = static_cast<size_t>(B) * T;
  for (size_t bt = 0; bt < rows; ++bt) {  // 1. the local lookup, 0 for tokens held elsewhere
    float* o = out + bt * C;
    const int row = local_row(tokens[bt], vocab);
    const float* tok = row >= 0 ? wte + static_cast<size_t>(row) * C : nullptr;
    for (int c = 0; c < C; ++c) o[c] = tok != nullptr ? tok[c] : 0.0f;
  }
  tp.sum(out, rows * C);  // 2. exactly one rank contributed each row: the sum is exact
  for (size_t bt = 0; bt < rows; ++bt) {  // 3. the position embedding, replicated
    float* o = out + bt * C;
    const float* pos = wpe + (bt % static_cast<size_t>(T)) * C;
    for (int c = 0; c < C; ++c) o[c] = o[c] + pos[c];
  }
}

void tp_embedding_backward(float* dwte, float* dwpe, const float* dout, const int32_t* tokens,
                           const VocabSlice& vocab, int B, int T, int C, const TpGroup& tp) {
  if (tp.degree == 1) {  // every token is local: the same additions in the same order
    encoder_backward(dwte, dwpe, dout, tokens, B, T, C);
    return;
  }
  for (int b = 0; b < B; ++b) {
    for (int t = 0; t < T; ++t) {
      const size_t bt = static_cast<size_t>(b) * T + t;
      const float* d = dout + bt * C;
      const int row = local_row(tokens[bt], vocab);
      float* dtok = row >= 0 ? dwte + static_cast<size_t>(row) * C : nullptr;
      float* dpos = dwpe + static_cast<size_t>(t) * C;
      for (int c = 0; c < C; ++c) {
        if (dtok != nullptr) dtok[c] += d[c];
        dpos[c] += d[c];
      }
    }
  }
}

size_t tp_crossentropy_forward(float* losses, float* probs, float* stats, const float* logits,
                               const int32_t* targets, const VocabSlice& vocab, int B, int T,
                               const TpGroup& tp) {
  const int V = vocab.rows;
  if (tp.degree == 1) return softmax_crossentropy_forward(losses, probs, logits, targets, B, T, V);
  const size_t rows = static_cast<size_t>(B) * T;
  float* mx = stats;              // (B,T) global max logit
  float* sums = stats + rows;     // (B,T) global sum of exp(z - mx)
  float* ztarget = sums + rows;   // (B,T) the target's logit
  for (size_t r = 0; r < rows; ++r) {  // 1. local max over the real columns
    const float* z = logits + r * V;
    float m = -INFINITY;
    for (int i = 0; i < vocab.valid; ++i) m = z[i] > m ? z[i] : m;
    mx[r] = m;
  }
  tp.max(mx, rows);
  for (size_t r = 0; r < rows; ++r) {  // 2. local exp sums and target logits
    const float* z = logits + r * V;
    float* p = probs + r * V;
    float sum = 0.0f;
    for (int i = 0; i < vocab.valid; ++i) {
      p[i] = std::exp(z[i] - mx[r]);
      sum += p[i];
    }
    for (int i = vocab.valid; i < V; ++i) p[i] = 0.0f;  // padding: exp(-inf)
    sums[r] = sum;
    const int row = local_row(targets[r], vocab);
    ztarget[r] = row >= 0 ? z[row] : 0.0f;
  }
  tp.sum(sums, 2 * rows);  // sums and ztarget are adjacent: one allreduce
  size_t counted = 0;
  for (size_t r = 0; r < rows; ++r) {  // 3. normalize; the loss in log-sum-exp form
    float* p = probs + r * V;
    const float inv = 1.0f / sums[r];
    for (int i = 0; i < vocab.valid; ++i) p[i] *= inv;
    if (targets[r] < 0) {
      losses[r] = 0.0f;
      continue;
    }
    losses[r] = std::log(sums[r]) + mx[r] - ztarget[r];
    ++counted;
  }
  return counted;
}

void tp_crossentropy_backward(float* dlogits, const float* probs, const int32_t* targets,
                              float dloss, const VocabSlice& vocab, int B, int T,
                              const TpGroup& tp) {
  const int V = vocab.rows;
  if (tp.degree == 1) {  // every column is a real local token: the same arithmetic
    softmax_crossentropy_backward(dlogits, probs, targets, dloss, B, T, V);
    return;
  }
  const size_t rows = static_cast<size_t>(B) * T;
  for (size_t r = 0; r < rows; ++r) {
    if (targets[r] < 0) continue;
    const float* p = probs + r * V;
    float* d = dlogits + r * V;
    for (int i = 0; i < V; ++i) d[i] += dloss * p[i];
    const int row = local_row(targets[r], vocab);
    if (row >= 0) d[row] -= dloss;
  }
}

}  // namespace plexus::engine
