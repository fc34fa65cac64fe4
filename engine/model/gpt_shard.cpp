// gpt_shard.cpp - GptShard's stage logic: activation slots, and the forward and backward pass of
// one pipeline chunk (embedding -> blocks -> head, then the reverse) over the tensor-parallel
// layers in tp_block.h and tp_vocab.h. See gpt_shard.h.
#include "engine/model/gpt_shard.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/model/layers/layernorm.h"
#include "engine/model/layers/matmul.h"

namespace plexus::engine {

// One microbatch's forward activations, kept until its backward.
struct GptShard::Slot {
  bool busy = false;  // holds a forward not yet consumed by backward
  int B = 0, T = 0;
  std::vector<float> acts;
  std::vector<int32_t> tokens, targets;
  size_t num_targets = 0;
  float* x0 = nullptr;  // (B,T,C): the embedding's output, or a copy of the input
  std::vector<TpBlockActs> blocks;
  // head only: (B,T,C), (B,T), (B,T), (B,T,rows), (B,T,rows), (B,T)
  float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;
  float *logits = nullptr, *probs = nullptr, *losses = nullptr;
};

GptShard::GptShard(const GptConfig& config, const ShardSpec& spec, TensorParallelOps ops)
    : config_(config), spec_(spec), ops_(std::move(ops)) {
  tensors_ = shard_tensors(config, spec);  // validates config and spec
  if (spec.tp_degree > 1 && (!ops_.allreduce_sum || !ops_.allreduce_max)) {
    throw std::invalid_argument("GptShard (" + spec.describe() + "): tp_degree " +
                                std::to_string(spec.tp_degree) +
                                " needs both TensorParallelOps functions");
  }
  const int Vl = padded_vocab(config.vocab_size, spec.tp_degree) / spec.tp_degree;
  vocab_.begin = std::min(spec.tp_rank * Vl, config.vocab_size);
  vocab_.rows = Vl;
  vocab_.valid = std::min(Vl, config.vocab_size - vocab_.begin);

  blocks_.assign(spec.last_block - spec.first_block, TpBlockOffsets{});
  size_t replicated = 0;
  for (const ShardTensor& t : tensors_) {
    if (t.replicated_in_tp) replicated += t.numel();
    if (t.name == "wte") wte_ = t.offset;
    if (t.name == "wpe") wpe_ = t.offset;
    if (t.name == "ln_f.weight") lnf_w_ = t.offset;
    if (t.name == "ln_f.bias") lnf_b_ = t.offset;
    if (t.name.rfind("blocks.", 0) != 0) continue;
    const size_t dot = t.name.find('.', 7);
    TpBlockOffsets& o = blocks_[std::stoi(t.name.substr(7, dot - 7)) - spec.first_block];
    const std::string field = t.name.substr(dot + 1);
    size_t* slot = field == "ln1.weight"         ? &o.ln1_w
                   : field == "ln1.bias"         ? &o.ln1_b
                   : field == "attn.qkv.weight"  ? &o.qkv_w
                   : field == "attn.qkv.bias"    ? &o.qkv_b
                   : field == "attn.proj.weight" ? &o.proj_w
                   : field == "attn.proj.bias"   ? &o.proj_b
                   : field == "ln2.weight"       ? &o.ln2_w
                   : field == "ln2.bias"         ? &o.ln2_b
                   : field == "mlp.fc.weight"    ? &o.fc_w
                   : field == "mlp.fc.bias"      ? &o.fc_b
                   : field == "mlp.proj.weight"  ? &o.fcproj_w
                                                 : &o.fcproj_b;
    *slot = t.offset;
  }
  const size_t n = tensors_.empty() ? 0 : tensors_.back().offset + tensors_.back().numel();
  params_.assign(n, 0.0f);
  grads_.assign(n, 0.0f);
  if (spec.tp_degree > 1) replicated_.assign(replicated, 0.0f);
}

GptShard::~GptShard() = default;
GptShard::GptShard(GptShard&&) noexcept = default;
GptShard& GptShard::operator=(GptShard&&) noexcept = default;

std::string GptShard::where(const char* function) const {
  return "GptShard::" + std::string(function) + " (" + spec_.describe() + ")";
}

std::vector<uint8_t> GptShard::decay_mask() const {
  std::vector<uint8_t> mask(params_.size(), 0);
  for (const ShardTensor& t : tensors_) {
    if (t.decay) std::memset(mask.data() + t.offset, 1, t.numel());
  }
  return mask;
}

void GptShard::zero_grad() { std::fill(grads_.begin(), grads_.end(), 0.0f); }

size_t GptShard::num_targets(int slot) const {
  if (slot < 0 || slot >= num_slots()) return 0;
  return slots_[slot]->num_targets;
}

// Sizes the slot's activations for (B,T) (growing only) and points into them.
void GptShard::layout_slot(Slot& s, int B, int T) const {
  const TpBlockDims d = dims(B, T);
  const size_t BT = d.rows(), BTC = BT * config_.n_embd, V = vocab_.rows;
  const size_t per_block = tp_block_acts_floats(d, spec_.tp_degree);
  const size_t head = spec_.head ? BTC + 2 * BT + 2 * BT * V + BT : 0;
  const size_t need = BTC + blocks_.size() * per_block + head;
  if (s.acts.size() < need) s.acts.resize(need);
  float* p = s.acts.data();
  s.x0 = p, p += BTC;
  s.blocks.resize(blocks_.size());
  for (TpBlockActs& a : s.blocks) a = tp_block_acts_at(p, d, spec_.tp_degree), p += per_block;
  if (spec_.head) {
    s.lnf = p, p += BTC;
    s.lnf_mean = p, p += BT;
    s.lnf_rstd = p, p += BT;
    s.logits = p, p += BT * V;
    s.probs = p, p += BT * V;
    s.losses = p;
  }
}

// Sizes the shared backward workspace (and the loss statistics) for (B,T), growing only.
void GptShard::layout_workspace(int B, int T) {
  const TpBlockDims d = dims(B, T);
  const size_t BT = d.rows(), BTC = BT * config_.n_embd, V = vocab_.rows;
  const size_t scratch = tp_block_scratch_floats(d, spec_.tp_degree);
  const size_t head = spec_.head ? BTC + BT * V + 3 * BT : 0;
  const size_t need = 3 * BTC + scratch + head;
  if (work_.size() < need) work_.resize(need);
  float* p = work_.data();
  dstream_a_ = p, p += BTC;
  dstream_b_ = p, p += BTC;
  dres2_ = p, p += BTC;
  scratch_ = tp_block_scratch_at(p, d, spec_.tp_degree), p += scratch;
  if (spec_.head) {
    dlnf_ = p, p += BTC;
    dlogits_ = p, p += BT * V;
    ce_stats_ = p;
  }
}

float GptShard::forward(int slot, const int32_t* tokens, const float* input,
                        const int32_t* targets, int B, int T, float* output) {
  const int C = config_.n_embd, V = config_.vocab_size;
  auto fail = [&](const std::string& what) {
    throw std::invalid_argument(where("forward") + ": " + what);
  };
  if (slot < 0 || slot > num_slots()) {
    fail("slot " + std::to_string(slot) + " not in 0.." + std::to_string(num_slots()));
  }
  if (B < 1) fail("B " + std::to_string(B) + " < 1");
  if (T < 1 || T > config_.max_seq_len) {
    fail("T " + std::to_string(T) + " not in 1.." + std::to_string(config_.max_seq_len) +
         " (max_seq_len)");
  }
  if (spec_.embed && tokens == nullptr) fail("tokens is null (this shard embeds)");
  if (!spec_.embed && input == nullptr) fail("input is null (this shard does not embed)");
  if (spec_.head && targets == nullptr) fail("targets is null (this shard computes the loss)");
  if (!spec_.head && output == nullptr) fail("output is null (this shard has no head)");
  const size_t BT = static_cast<size_t>(B) * T, BTC = BT * C;
  for (size_t i = 0; i < BT; ++i) {
    if (spec_.embed && (tokens[i] < 0 || tokens[i] >= V)) {
      fail("tokens[" + std::to_string(i) + "] " + std::to_string(tokens[i]) + " not in 0.." +
           std::to_string(V - 1));
    }
    if (spec_.head && targets[i] >= V) {
      fail("targets[" + std::to_string(i) + "] " + std::to_string(targets[i]) + " not in 0.." +
           std::to_string(V - 1) + " (or < 0 to ignore)");
    }
  }
  if (slot == num_slots()) slots_.push_back(std::make_unique<Slot>());
  Slot& s = *slots_[slot];
  s.busy = false;
  layout_slot(s, B, T);
  layout_workspace(B, T);
  s.B = B, s.T = T, s.num_targets = 0;
  if (spec_.embed) s.tokens.assign(tokens, tokens + BT);
  if (spec_.head) s.targets.assign(targets, targets + BT);

  const TpGroup group = tp();
  const TpBlockDims d = dims(B, T);
  const float* P = params_.data();
  if (spec_.embed) {
    tp_embedding_forward(s.x0, tokens, P + wte_, P + wpe_, vocab_, B, T, C, group);
  } else {
    std::memcpy(s.x0, input, BTC * sizeof(float));
  }
  const float* x = s.x0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    tp_block_forward(s.blocks[i], x, P, blocks_[i], d, group);
    x = s.blocks[i].res3;
  }
  s.busy = true;
  if (!spec_.head) {
    std::memcpy(output, x, BTC * sizeof(float));
    return 0.0f;
  }
  layernorm_forward(s.lnf, s.lnf_mean, s.lnf_rstd, x, P + lnf_w_, P + lnf_b_, B, T, C);
  matmul_forward(s.logits, s.lnf, P + wte_, nullptr, B, T, C, vocab_.rows);  // tied LM head
  s.num_targets = tp_crossentropy_forward(s.losses, s.probs, ce_stats_, s.logits, targets,
                                          vocab_, B, T, group);
  if (s.num_targets == 0) return 0.0f;
  double sum = 0.0;
  for (size_t i = 0; i < BT; ++i) sum += s.losses[i];
  return static_cast<float>(sum / static_cast<double>(s.num_targets));
}

void GptShard::backward(int slot, const float* grad_output, float* grad_input,
                        float loss_scale) {
  if (slot < 0 || slot >= num_slots() || !slots_[slot]->busy) {
    throw std::logic_error(where("backward") + ": slot " + std::to_string(slot) +
                           " holds no forward (forward fills slots 0.." +
                           std::to_string(num_slots()) + ", backward frees them)");
  }
  if (!spec_.head && grad_output == nullptr) {
    throw std::invalid_argument(where("backward") + ": grad_output is null (no head)");
  }
  if (!spec_.embed && grad_input == nullptr) {
    throw std::invalid_argument(where("backward") + ": grad_input is null (no embedding)");
  }
  Slot& s = *slots_[slot];
  const int B = s.B, T = s.T, C = config_.n_embd;
  const size_t BT = static_cast<size_t>(B) * T, BTC = BT * C;
  if (spec_.head && s.num_targets == 0) {  // nothing to learn from; consistent on all tp ranks
    if (!spec_.embed) std::fill(grad_input, grad_input + BTC, 0.0f);
    s.busy = false;
    return;
  }
  layout_workspace(B, T);
  const TpGroup group = tp();
  const TpBlockDims d = dims(B, T);
  const float* P = params_.data();
  float* G = grads_.data();
  float* dcur = dstream_a_;  // gradient of the stream after the current block
  float* dnext = dstream_b_;

  if (spec_.head) {
    std::fill(dlogits_, dlogits_ + BT * vocab_.rows, 0.0f);
    std::fill(dlnf_, dlnf_ + BTC, 0.0f);
    std::fill(dcur, dcur + BTC, 0.0f);
    const float dloss = loss_scale / static_cast<float>(s.num_targets);
    tp_crossentropy_backward(dlogits_, s.probs, s.targets.data(), dloss, vocab_, B, T);
    matmul_backward(dlnf_, G + wte_, nullptr, dlogits_, s.lnf, P + wte_, B, T, C, vocab_.rows);
    group.sum(dlnf_, BTC);  // the LM head is column-parallel (vocabulary): "f"
    const float* x_last = blocks_.empty() ? s.x0 : s.blocks.back().res3;
    layernorm_backward(dcur, G + lnf_w_, G + lnf_b_, dlnf_, x_last, P + lnf_w_, s.lnf_mean,
                       s.lnf_rstd, B, T, C);
  } else {
    std::memcpy(dcur, grad_output, BTC * sizeof(float));
  }
  for (size_t i = blocks_.size(); i-- > 0;) {
    std::fill(dnext, dnext + BTC, 0.0f);
    std::fill(dres2_, dres2_ + BTC, 0.0f);
    const float* x = i == 0 ? s.x0 : s.blocks[i - 1].res3;
    tp_block_backward(dnext, dres2_, scratch_, dcur, x, s.blocks[i], P, G, blocks_[i], d,
                      group);
    std::swap(dcur, dnext);
  }
  if (spec_.embed) {
    tp_embedding_backward(G + wte_, G + wpe_, dcur, s.tokens.data(), vocab_, B, T, C);
  } else {
    std::memcpy(grad_input, dcur, BTC * sizeof(float));
  }
  sync_replicated_grads();
  s.busy = false;
}

// Replicated tensors get equal gradients on every tensor rank in exact arithmetic; one packed
// sum-allreduce divided by tp keeps them bit-identical whatever the rounding.
void GptShard::sync_replicated_grads() {
  if (spec_.tp_degree == 1 || replicated_.empty()) return;
  float* p = replicated_.data();
  for (const ShardTensor& t : tensors_) {
    if (!t.replicated_in_tp) continue;
    std::memcpy(p, grads_.data() + t.offset, t.numel() * sizeof(float));
    p += t.numel();
  }
  tp().sum(replicated_.data(), replicated_.size());
  const float tp = static_cast<float>(spec_.tp_degree);
  p = replicated_.data();
  for (const ShardTensor& t : tensors_) {
    if (!t.replicated_in_tp) continue;
    float* g = grads_.data() + t.offset;
    for (size_t i = 0; i < t.numel(); ++i) g[i] = p[i] / tp;
    p += t.numel();
  }
}

}  // namespace plexus::engine
