// gpt_shard.cpp - GptShard's stage logic: the forward and backward pass of one pipeline chunk
// (embedding -> blocks -> head, then the reverse) over the tensor-parallel layers in tp_block.h
// and tp_vocab.h, with the unit hooks around each unit's use (param_units.h) and activation
// checkpointing and offloading (activation_policy.h, shard_activations.h). See gpt_shard.h.
#include "engine/model/gpt_shard.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/memory/compute_fill.h"
#include "engine/model/layers/layernorm.h"
#include "engine/model/layers/matmul.h"
#include "engine/model/shard_activations.h"

namespace plexus::engine {

GptShard::GptShard(const GptConfig& config, const ShardSpec& spec, TensorParallelOps ops,
                   MemoryTracker* tracker, StorageOptions storage)
    : config_(config), spec_(spec), ops_(std::move(ops)),
      tracker_(tracker != nullptr ? tracker : &memory_tracker()) {
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
  for (const ShardTensor& t : tensors_) {
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
  params_ = TrackedBuffer(n, MemoryPool::kDevice, MemoryCategory::kParameters,
                          storage.params_committed, tracker_);
  grads_ = TrackedBuffer(n, MemoryPool::kDevice, MemoryCategory::kGradients,
                         storage.grads_committed, tracker_);
  build_units();
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

void GptShard::zero_grad() {
  if (grads_.committed() == 0) return;  // ZeRO-2/3 between backward passes
  if (grads_.committed() == grads_.size()) {
    compute_fill(grads_.data(), grads_.size(), 0.0f);
    return;
  }
  for (const ParamUnit& u : units_) {  // ZeRO-2 keeps a unit whole or a part of it
    float* g = grads_.data() + u.offset;
    if (grads_.is_committed(u.offset, u.count)) {
      compute_fill(g, u.count, 0.0f);
      continue;
    }
    for (size_t i = 0; i < u.count; ++i) {
      if (grads_.is_committed(u.offset + i, 1)) g[i] = 0.0f;
    }
  }
}

size_t GptShard::num_targets(int slot) const {
  if (slot < 0 || slot >= num_slots()) return 0;
  return slots_[slot]->num_targets;
}

void GptShard::set_activation_policy(const ActivationPolicy& policy) {
  const std::string problem = policy.validate();
  if (!problem.empty()) {
    throw std::invalid_argument(where("set_activation_policy") + ": " + problem);
  }
  policy_ = policy;
  slots_.clear();
  recompute_ = TrackedBuffer();
  recompute_acts_.clear();
}

int GptShard::group_size() const {
  return policy_.checkpoint_every > 0 ? policy_.checkpoint_every : 1;
}

ShardWorkspace shard_workspace_floats(const GptConfig& config, const ShardSpec& spec,
                                      const ActivationPolicy& policy, int B, int T) {
  const TpBlockDims d{B, T, config.n_embd, config.n_head};
  const size_t BT = d.rows(), BTC = BT * config.n_embd;
  const size_t V = static_cast<size_t>(padded_vocab(config.vocab_size, spec.tp_degree)) /
                   spec.tp_degree;  // the shard's local vocabulary rows (tp_vocab.h)
  const size_t scratch = tp_block_scratch_floats(d, spec.tp_degree);
  const size_t head = spec.head ? BTC + BT * V + 3 * BT : 0;
  ShardWorkspace out;
  out.workspace = 3 * BTC + scratch + head;
  const size_t blocks = static_cast<size_t>(spec.last_block - spec.first_block);
  if (policy.checkpoint_every > 0 && blocks > 0) {
    out.recompute = std::min<size_t>(policy.checkpoint_every, blocks) *
                    tp_block_acts_floats(d, spec.tp_degree);
  }
  return out;
}

// Sizes the shared backward workspace (and the loss statistics) and, when checkpointing, the
// recompute area (group_size() blocks' activations) for (B,T), growing only; the sizes are
// shard_workspace_floats', which the memory model predicts with.
void GptShard::layout_workspace(int B, int T) {
  const TpBlockDims d = dims(B, T);
  const size_t BT = d.rows(), BTC = BT * config_.n_embd, V = vocab_.rows;
  const size_t scratch = tp_block_scratch_floats(d, spec_.tp_degree);
  const ShardWorkspace need = shard_workspace_floats(config_, spec_, policy_, B, T);
  if (work_.size() < need.workspace) {
    work_ = TrackedBuffer();
    work_ = TrackedBuffer(need.workspace, MemoryPool::kDevice, MemoryCategory::kActivations, true,
                          tracker_);
  }
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
  if (policy_.checkpoint_every == 0 || blocks_.empty()) return;
  const size_t group = std::min<size_t>(group_size(), blocks_.size());
  const size_t per_block = tp_block_acts_floats(d, spec_.tp_degree);
  if (recompute_.size() < need.recompute) {
    recompute_ = TrackedBuffer();
    recompute_ = TrackedBuffer(need.recompute, MemoryPool::kDevice,
                               MemoryCategory::kActivations, true, tracker_);
  }
  recompute_acts_.clear();
  for (size_t i = 0; i < group; ++i) {
    recompute_acts_.push_back(tp_block_acts_at(recompute_.data() + i * per_block, d,
                                               spec_.tp_degree));
  }
}

void GptShard::check_forward_args(int slot, const int32_t* tokens, const float* input,
                                  const int32_t* targets, int B, int T, float* output) const {
  const int V = config_.vocab_size;
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
  const size_t BT = static_cast<size_t>(B) * T;
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
}

float GptShard::forward(int slot, const int32_t* tokens, const float* input,
                        const int32_t* targets, int B, int T, float* output) {
  check_forward_args(slot, tokens, input, targets, B, T, output);
  const int C = config_.n_embd;
  const size_t BT = static_cast<size_t>(B) * T, BTC = BT * C;
  if (slot == num_slots()) slots_.push_back(std::make_unique<ActivationSlot>(tracker_));
  ActivationSlot& s = *slots_[slot];
  const int nb = static_cast<int>(blocks_.size());
  s.prepare(SlotShape{B, T, C, config_.n_head, spec_.tp_degree, nb, vocab_.rows, spec_.embed,
                      spec_.head},
            policy_);
  layout_workspace(B, T);
  if (spec_.embed) std::copy(tokens, tokens + BT, s.tokens());
  if (spec_.head) std::copy(targets, targets + BT, s.targets());

  const TpGroup group = tp();
  const TpBlockDims d = dims(B, T);
  const float* P = params_.data();
  float* x0 = s.open_input(0);
  if (spec_.embed) {
    acquire(unit_wte_, UnitPhase::kForward);
    acquire(unit_wpe_, UnitPhase::kForward);
    tp_embedding_forward(x0, s.tokens(), P + wte_, P + wpe_, vocab_, B, T, C, group);
    release(unit_wpe_, UnitPhase::kForward);
    release(unit_wte_, UnitPhase::kForward);
  } else {
    std::memcpy(x0, input, BTC * sizeof(float));
  }
  // Plain: block i's activations stay in the slot. Checkpointing: group g's blocks run in the
  // recompute area from the group's input; the next group's input is the last one's output.
  const float* x = x0;
  const int N = group_size();
  for (int g = 0, first = 0; first < nb; ++g, first += N) {
    const int end = std::min(nb, first + N);
    for (int i = first; i < end; ++i) {
      const TpBlockActs& a = s.checkpointing() ? recompute_acts_[i - first] : s.block(i);
      acquire(unit_block0_ + i, UnitPhase::kForward);
      tp_block_forward(a, x, P, blocks_[i], d, group);
      release(unit_block0_ + i, UnitPhase::kForward);
      x = a.res3;
    }
    if (!s.checkpointing()) continue;
    s.offload(g);
    if (end < nb) {
      float* next = s.open_input(g + 1);
      std::memcpy(next, x, BTC * sizeof(float));
      x = next;
    } else if (spec_.head) {
      std::memcpy(s.output(), x, BTC * sizeof(float));
      x = s.output();
    }
  }
  if (!spec_.head) {
    std::memcpy(output, x, BTC * sizeof(float));
    s.busy = true;
    return 0.0f;
  }
  const SlotHead& h = s.head();
  const int head_wte = spec_.embed ? unit_wte_ : unit_head_wte_;
  acquire(unit_lnf_, UnitPhase::kForward);
  acquire(head_wte, UnitPhase::kForward);
  layernorm_forward(h.lnf, h.lnf_mean, h.lnf_rstd, x, P + lnf_w_, P + lnf_b_, B, T, C);
  matmul_forward(h.logits, h.lnf, P + wte_, nullptr, B, T, C, vocab_.rows);  // tied LM head
  release(head_wte, UnitPhase::kForward);
  release(unit_lnf_, UnitPhase::kForward);
  s.num_targets = tp_crossentropy_forward(h.losses, h.probs, ce_stats_, h.logits, s.targets(),
                                          vocab_, B, T, group);
  s.busy = true;
  if (s.num_targets == 0) return 0.0f;
  double sum = 0.0;
  for (size_t i = 0; i < BT; ++i) sum += h.losses[i];
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
  ActivationSlot& s = *slots_[slot];
  const size_t BTC = static_cast<size_t>(s.B) * s.T * config_.n_embd;
  // A head without targets has nothing to learn (the same on every tensor rank): no arithmetic,
  // but every hook call, as on the data-parallel ranks that do learn.
  const bool compute = !(spec_.head && s.num_targets == 0);
  layout_workspace(s.B, s.T);
  float* dcur = dstream_a_;  // gradient of the stream after the current block
  float* dnext = dstream_b_;
  if (spec_.head) {
    backward_head(s, dcur, loss_scale, compute);
  } else {
    std::memcpy(dcur, grad_output, BTC * sizeof(float));
  }
  backward_blocks(s, dcur, dnext, compute);
  if (spec_.embed) {
    backward_embedding(s, dcur, compute);
  } else if (compute) {
    std::memcpy(grad_input, dcur, BTC * sizeof(float));
  } else {
    std::fill(grad_input, grad_input + BTC, 0.0f);
  }
  s.busy = false;
}

// The loss -> ln_f: dcur (B,T,C) = the gradient of the last block's output.
void GptShard::backward_head(ActivationSlot& s, float* dcur, float loss_scale, bool compute) {
  const int B = s.B, T = s.T, C = config_.n_embd;
  const size_t BT = static_cast<size_t>(B) * T, BTC = BT * C;
  const int head_wte = spec_.embed ? unit_wte_ : unit_head_wte_;
  const float* P = params_.data();
  float* G = grads_.data();
  acquire(unit_lnf_, UnitPhase::kBackward);
  acquire(head_wte, UnitPhase::kBackward);
  if (compute) {
    const SlotHead& h = s.head();
    compute_fill(dlogits_, BT * vocab_.rows, 0.0f);
    compute_fill(dlnf_, BTC, 0.0f);
    compute_fill(dcur, BTC, 0.0f);
    const float dloss = loss_scale / static_cast<float>(s.num_targets);
    tp_crossentropy_backward(dlogits_, h.probs, s.targets(), dloss, vocab_, B, T, tp());
    matmul_backward(dlnf_, G + wte_, nullptr, dlogits_, h.lnf, P + wte_, B, T, C, vocab_.rows);
    tp().sum(dlnf_, BTC);  // the LM head is column-parallel (vocabulary): "f"
    layernorm_backward(dcur, G + lnf_w_, G + lnf_b_, dlnf_, s.output(), P + lnf_w_,
                       h.lnf_mean, h.lnf_rstd, B, T, C);
  }
  release(head_wte, UnitPhase::kBackward);
  release(unit_lnf_, UnitPhase::kBackward);
  finish_unit(unit_lnf_, compute);
  if (!spec_.embed) finish_unit(unit_head_wte_, compute);
}

// Checkpointing: group [first, end)'s forward again, into the recompute area.
void GptShard::recompute_group(ActivationSlot& s, int first, int end, bool compute) {
  const float* x = s.input(first / group_size());
  for (int i = first; i < end; ++i) {
    acquire(unit_block0_ + i, UnitPhase::kRecompute);
    if (compute) {
      tp_block_forward(recompute_acts_[i - first], x, params_.data(), blocks_[i],
                       dims(s.B, s.T), tp());
    }
    release(unit_block0_ + i, UnitPhase::kRecompute);
    x = recompute_acts_[i - first].res3;
  }
}

// The blocks, last first, group by group; dcur ends as the gradient of x0.
void GptShard::backward_blocks(ActivationSlot& s, float*& dcur, float*& dnext, bool compute) {
  const int nb = static_cast<int>(blocks_.size()), N = group_size();
  const size_t BTC = static_cast<size_t>(s.B) * s.T * config_.n_embd;
  for (int g = (nb + N - 1) / N; g-- > 0;) {
    const int first = g * N, end = std::min(nb, first + N);
    if (s.checkpointing()) {
      for (int k = g; k > g - policy_.loading_horizon; --k) s.fetch(k);  // no-op unless offloading
      recompute_group(s, first, end, compute);
    }
    for (int i = end; i-- > first;) {
      acquire(unit_block0_ + i, UnitPhase::kBackward);
      if (compute) {
        const bool ck = s.checkpointing();
        const float* x = i == first && ck ? s.input(g)
                         : ck             ? recompute_acts_[i - first - 1].res3
                         : i == 0         ? s.input(0)
                                          : s.block(i - 1).res3;
        const TpBlockActs& a = ck ? recompute_acts_[i - first] : s.block(i);
        compute_fill(dnext, BTC, 0.0f);
        compute_fill(dres2_, BTC, 0.0f);
        tp_block_backward(dnext, dres2_, scratch_, dcur, x, a, params_.data(), grads_.data(),
                          blocks_[i], dims(s.B, s.T), tp());
        std::swap(dcur, dnext);
      }
      release(unit_block0_ + i, UnitPhase::kBackward);
      finish_unit(unit_block0_ + i, compute);
    }
    if (s.checkpointing()) s.drop(g);
  }
}

void GptShard::backward_embedding(ActivationSlot& s, const float* dcur, bool compute) {
  acquire(unit_wte_, UnitPhase::kBackward);
  acquire(unit_wpe_, UnitPhase::kBackward);
  if (compute) {
    float* G = grads_.data();
    tp_embedding_backward(G + wte_, G + wpe_, dcur, s.tokens(), vocab_, s.B, s.T,
                          config_.n_embd, tp());
  }
  release(unit_wpe_, UnitPhase::kBackward);
  release(unit_wte_, UnitPhase::kBackward);
  finish_unit(unit_wte_, compute);
  finish_unit(unit_wpe_, compute);
}

}  // namespace plexus::engine
