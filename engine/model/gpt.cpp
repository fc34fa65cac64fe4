// gpt.cpp - Gpt's forward pass and its backward pass (the forward in reverse), on the layers in
// layers/. Parameters and activations are carved from flat buffers; see gpt.h.
#include "engine/model/gpt.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/memory/compute_fill.h"
#include "engine/model/carver.h"
#include "engine/model/layers/attention.h"
#include "engine/model/layers/encoder.h"
#include "engine/model/layers/gelu.h"
#include "engine/model/layers/layernorm.h"
#include "engine/model/layers/matmul.h"
#include "engine/model/layers/residual.h"
#include "engine/model/layers/softmax_crossentropy.h"

namespace plexus::engine {

// Sizes acts_ for (B,T) (growing it if needed) and points the activation pointers into it.
void Gpt::layout_activations(int B, int T) {
  const size_t BT = static_cast<size_t>(B) * T, C = config_.n_embd, V = config_.vocab_size;
  const size_t att = static_cast<size_t>(B) * config_.n_head * T * T;
  for (int pass = 0; pass < 2; ++pass) {
    Carver c(pass == 0 ? nullptr : acts_.data());
    block_acts_.assign(config_.n_layer, BlockActs{});
    encoded_ = c.take(BT * C);
    for (BlockActs& a : block_acts_) {
      a.ln1 = c.take(BT * C), a.ln1_mean = c.take(BT), a.ln1_rstd = c.take(BT);
      a.qkv = c.take(BT * 3 * C), a.atty = c.take(BT * C), a.att = c.take(att);
      a.attproj = c.take(BT * C), a.res2 = c.take(BT * C);
      a.ln2 = c.take(BT * C), a.ln2_mean = c.take(BT), a.ln2_rstd = c.take(BT);
      a.fch = c.take(BT * 4 * C), a.fch_gelu = c.take(BT * 4 * C);
      a.fcproj = c.take(BT * C), a.res3 = c.take(BT * C);
    }
    lnf_ = c.take(BT * C), lnf_mean_ = c.take(BT), lnf_rstd_ = c.take(BT);
    logits_ = c.take(BT * V), probs_ = c.take(BT * V), losses_ = c.take(BT);
    if (pass == 0 && acts_.size() < c.used()) acts_.resize(c.used());
  }
}

// Sizes grad_acts_ for the last forward's (B,T) and points the gradient pointers into it.
void Gpt::layout_gradients() {
  const size_t BT = static_cast<size_t>(B_) * T_, C = config_.n_embd, V = config_.vocab_size;
  const int L = config_.n_layer;
  for (int pass = 0; pass < 2; ++pass) {
    Carver c(pass == 0 ? nullptr : grad_acts_.data());
    dstream_.assign(L + 1, nullptr);
    dres2_.assign(L, nullptr);
    for (int l = 0; l <= L; ++l) dstream_[l] = c.take(BT * C);
    for (int l = 0; l < L; ++l) dres2_[l] = c.take(BT * C);
    dlnf_ = c.take(BT * C), dlogits_ = c.take(BT * V);
    BlockGrads& g = block_grads_;
    g.dln1 = c.take(BT * C), g.dqkv = c.take(BT * 3 * C), g.datty = c.take(BT * C);
    g.dattproj = c.take(BT * C), g.dln2 = c.take(BT * C), g.dfch = c.take(BT * 4 * C);
    g.dfch_gelu = c.take(BT * 4 * C), g.dfcproj = c.take(BT * C);
    att_scratch_ = c.take(static_cast<size_t>(T_) * T_);
    if (pass == 0 && grad_acts_.size() < c.used()) grad_acts_.resize(c.used());
  }
}

float Gpt::forward(const int32_t* tokens, const int32_t* targets, int B, int T) {
  const int C = config_.n_embd, V = config_.vocab_size, NH = config_.n_head;
  if (B < 1) throw std::invalid_argument("Gpt::forward: B " + std::to_string(B) + " < 1");
  if (T < 1 || T > config_.max_seq_len) {
    throw std::invalid_argument("Gpt::forward: T " + std::to_string(T) + " not in 1.." +
                                std::to_string(config_.max_seq_len) + " (max_seq_len)");
  }
  if (tokens == nullptr) throw std::invalid_argument("Gpt::forward: tokens is null");
  const size_t BT = static_cast<size_t>(B) * T;
  for (size_t i = 0; i < BT; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V) {
      throw std::invalid_argument("Gpt::forward: tokens[" + std::to_string(i) + "] " +
                                  std::to_string(tokens[i]) + " not in 0.." +
                                  std::to_string(V - 1));
    }
    if (targets != nullptr && targets[i] >= V) {
      throw std::invalid_argument("Gpt::forward: targets[" + std::to_string(i) + "] " +
                                  std::to_string(targets[i]) + " not in 0.." +
                                  std::to_string(V - 1) + " (or < 0 to ignore)");
    }
  }
  layout_activations(B, T);
  B_ = B, T_ = T;
  tokens_.assign(tokens, tokens + BT);
  have_targets_ = targets != nullptr;
  if (have_targets_) targets_.assign(targets, targets + BT);
  num_targets_ = 0;

  const float* P = params_.data();
  encoder_forward(encoded_, tokens_.data(), P + wte_, P + wpe_, B, T, C);
  const float* x = encoded_;
  for (int l = 0; l < config_.n_layer; ++l) {
    const BlockOffsets& o = blocks_[l];
    const BlockActs& a = block_acts_[l];
    layernorm_forward(a.ln1, a.ln1_mean, a.ln1_rstd, x, P + o.ln1_w, P + o.ln1_b, B, T, C);
    matmul_forward(a.qkv, a.ln1, P + o.qkv_w, P + o.qkv_b, B, T, C, 3 * C);
    attention_forward(a.atty, a.att, a.qkv, B, T, C, NH);
    matmul_forward(a.attproj, a.atty, P + o.proj_w, P + o.proj_b, B, T, C, C);
    residual_forward(a.res2, x, a.attproj, BT * C);
    layernorm_forward(a.ln2, a.ln2_mean, a.ln2_rstd, a.res2, P + o.ln2_w, P + o.ln2_b, B, T, C);
    matmul_forward(a.fch, a.ln2, P + o.fc_w, P + o.fc_b, B, T, C, 4 * C);
    gelu_forward(a.fch_gelu, a.fch, BT * 4 * C);
    matmul_forward(a.fcproj, a.fch_gelu, P + o.fcproj_w, P + o.fcproj_b, B, T, 4 * C, C);
    residual_forward(a.res3, a.res2, a.fcproj, BT * C);
    x = a.res3;
  }
  layernorm_forward(lnf_, lnf_mean_, lnf_rstd_, x, P + lnf_w_, P + lnf_b_, B, T, C);
  matmul_forward(logits_, lnf_, P + wte_, nullptr, B, T, C, V);  // tied LM head
  if (!have_targets_) return 0.0f;

  num_targets_ =
      softmax_crossentropy_forward(losses_, probs_, logits_, targets_.data(), B, T, V);
  if (num_targets_ == 0) return 0.0f;
  double sum = 0.0;
  for (size_t i = 0; i < BT; ++i) sum += losses_[i];
  return static_cast<float>(sum / static_cast<double>(num_targets_));
}

void Gpt::zero_grad() { compute_fill(grads_.data(), grads_.size(), 0.0f); }

void Gpt::backward() {
  if (!have_targets_) {
    throw std::logic_error("Gpt::backward: the last forward had no targets (or there was none)");
  }
  if (num_targets_ == 0) return;
  const int B = B_, T = T_, C = config_.n_embd, V = config_.vocab_size, NH = config_.n_head;
  const int L = config_.n_layer;
  const size_t BT = static_cast<size_t>(B) * T;
  layout_gradients();
  const size_t block_scratch = static_cast<size_t>(block_grads_.dfcproj - block_grads_.dln1) +
                               BT * C;  // the BlockGrads slices are contiguous
  // everything before the block scratch: dstream, dres2, dlnf, dlogits
  compute_fill(grad_acts_.data(), static_cast<size_t>(block_grads_.dln1 - grad_acts_.data()),
               0.0f);
  const float* P = params_.data();
  float* G = grads_.data();

  const float dloss = 1.0f / static_cast<float>(num_targets_);
  softmax_crossentropy_backward(dlogits_, probs_, targets_.data(), dloss, B, T, V);
  matmul_backward(dlnf_, G + wte_, nullptr, dlogits_, lnf_, P + wte_, B, T, C, V);
  const float* x_last = L > 0 ? block_acts_[L - 1].res3 : encoded_;
  layernorm_backward(dstream_[L], G + lnf_w_, G + lnf_b_, dlnf_, x_last, P + lnf_w_, lnf_mean_,
                     lnf_rstd_, B, T, C);
  for (int l = L - 1; l >= 0; --l) {
    const BlockOffsets& o = blocks_[l];
    const BlockActs& a = block_acts_[l];
    const BlockGrads& g = block_grads_;
    const float* x = l == 0 ? encoded_ : block_acts_[l - 1].res3;
    compute_fill(g.dln1, block_scratch, 0.0f);
    residual_backward(dres2_[l], g.dfcproj, dstream_[l + 1], BT * C);
    matmul_backward(g.dfch_gelu, G + o.fcproj_w, G + o.fcproj_b, g.dfcproj, a.fch_gelu,
                    P + o.fcproj_w, B, T, 4 * C, C);
    gelu_backward(g.dfch, a.fch, g.dfch_gelu, BT * 4 * C);
    matmul_backward(g.dln2, G + o.fc_w, G + o.fc_b, g.dfch, a.ln2, P + o.fc_w, B, T, C, 4 * C);
    layernorm_backward(dres2_[l], G + o.ln2_w, G + o.ln2_b, g.dln2, a.res2, P + o.ln2_w,
                       a.ln2_mean, a.ln2_rstd, B, T, C);
    residual_backward(dstream_[l], g.dattproj, dres2_[l], BT * C);
    matmul_backward(g.datty, G + o.proj_w, G + o.proj_b, g.dattproj, a.atty, P + o.proj_w, B,
                    T, C, C);
    attention_backward(g.dqkv, att_scratch_, g.datty, a.qkv, a.att, B, T, C, NH);
    matmul_backward(g.dln1, G + o.qkv_w, G + o.qkv_b, g.dqkv, a.ln1, P + o.qkv_w, B, T, C,
                    3 * C);
    layernorm_backward(dstream_[l], G + o.ln1_w, G + o.ln1_b, g.dln1, x, P + o.ln1_w, a.ln1_mean,
                       a.ln1_rstd, B, T, C);
  }
  encoder_backward(G + wte_, G + wpe_, dstream_[0], tokens_.data(), B, T, C);
}

}  // namespace plexus::engine
