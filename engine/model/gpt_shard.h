// gpt_shard.h - the part of a Gpt (gpt.h) that one rank holds under pipeline and tensor
// parallelism: a contiguous run of blocks (a pipeline chunk), the embedding if it is the first
// chunk, the final LayerNorm and the tied LM head if it is the last, and of each of those this
// tensor rank's Megatron-LM slice (Shoeybi et al. 2019; tp_block.h, tp_vocab.h).
//
// Layout. The shard's parameters sit in one flat buffer (gradients in a second, same layout),
// tensors in forward order: [wte, wpe] if embed; the blocks' 12 tensors each, in Gpt's order;
// [ln_f.weight, ln_f.bias] if head, then [wte] if head without embed (its own copy of the tied
// weight). The full spec with tp_degree 1 therefore has exactly Gpt's layout, and runs Gpt's
// operations in Gpt's order: its loss and gradients are bit-identical to Gpt's.
//
// Tensor split (tp_degree > 1, rank r of tp, C = n_embd):
//   attn.qkv.weight/bias   rows [r*C/tp, (r+1)*C/tp) of each of q, k, v (its heads; 3 parts)
//   mlp.fc.weight/bias     rows [r*4C/tp, (r+1)*4C/tp)
//   attn.proj.weight       columns [r*C/tp, (r+1)*C/tp); mlp.proj.weight: [r*4C/tp, ...)
//   wte                    rows [r*Vp/tp, (r+1)*Vp/tp) of the vocabulary padded to Vp
//   everything else        replicated (LayerNorms, wpe, the two row-parallel biases)
// Replicated tensors' gradients are sum-allreduced over the tensor group and divided by tp at
// the end of each unit's backward (one packed allreduce per unit that has any), so they stay
// bit-identical on every tensor rank.
//
// Units and hooks (param_units.h): units() cuts the buffer into "wte", "wpe", "blocks.<i>",
// "ln_f" (and "wte" again for a head without the embedding); forward and backward call the
// UnitHooks set by set_unit_hooks() around each unit's use, in the order param_units.h gives,
// so a ZeRO runtime can gather, free and reduce parameters and gradients unit by unit. The
// tensor-parallel sync of a unit's replicated gradients runs right before gradient_ready(unit).
//
// Memory: params and grads are TrackedBuffers in (device, parameters) and (device, gradients),
// committed whole or not at all as StorageOptions say (a ZeRO runtime builds them uncommitted
// and initialises unit by unit with init_unit_parameters, so the whole model is never held);
// every activation, the backward workspace and the recompute area in (device, activations),
// offloaded block inputs in (host, activations) (shard_activations.h), the packed replicated
// gradients for their allreduce in (device, communication); all in the tracker given to the
// constructor (memory_tracker() by default). The device pool's buffers are CUDA managed memory
// when the shard is built on cuda (engine/device/compute.h, tracked_buffer.h), and the layers
// run there; the tensor-parallel collectives and the vocabulary loops of tp_vocab.h (tp > 1)
// stay on the host.
//
// Activation checkpointing and offloading (set_activation_policy, activation_policy.h): with
// checkpoint_every N a slot keeps only the inputs of blocks 0, N, 2N, ... (and the head's
// activations); the backward of each group of N blocks first runs their forward again in a
// shared recompute area. Recompute repeats the same operations (and tensor-parallel
// allreduces) in the same order, so losses and gradients are bit-identical to no checkpointing.
//
// Not done here (the engine's job): with several pipeline stages, the first and last both hold
// wte; sum-allreduce its gradient between them after backward so both copies stay equal.
//
// Errors: the constructor throws std::invalid_argument, forward std::invalid_argument and
// backward std::logic_error, each naming the function, the shard, the argument, its value and
// the valid range. Exceptions thrown by TensorParallelOps pass through. Nothing here crosses
// the C ABI; the engine catches.
//
// Thread safety: a GptShard is not thread-safe; use one per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/memory/tracked_buffer.h"
#include "engine/model/activation_policy.h"
#include "engine/model/gpt.h"
#include "engine/model/param_units.h"
#include "engine/model/tp_block.h"
#include "engine/model/tp_ops.h"
#include "engine/model/tp_vocab.h"

namespace plexus::engine {

struct ShardSpec {
  int first_block = 0;  // blocks [first_block, last_block) of the full model
  int last_block = 0;
  bool embed = true;  // holds wte/wpe and does the embedding (first pipeline chunk)
  bool head = true;   // holds ln_f and the tied LM head (wte) and computes the loss (last chunk)
  int tp_degree = 1;  // tensor-parallel degree and this rank's coordinate
  int tp_rank = 0;

  // "" if valid for config; otherwise one message naming the first bad field, its value and
  // the valid range, e.g. "ShardSpec: tp_degree 3 does not divide n_head 4".
  std::string validate(const GptConfig& config) const;
  // "blocks 2-3 +head, tp 1/2": used in messages.
  std::string describe() const;
};

// One parameter tensor of a shard, with where it sits in the full model (for gathering,
// comparing and checkpoints).
struct ShardTensor {
  std::string name;        // global name as in Gpt::param_table(): "blocks.3.attn.qkv.weight"
  size_t offset = 0;       // in the shard's flat buffer
  std::vector<int> shape;  // local shape
  std::vector<int> full_shape;
  int split_dim = -1;  // dimension split across tensor ranks, -1 = whole (replicated or tp 1)
  // rows/cols of the full tensor this shard holds along split_dim: [split_begin, split_end).
  // With split_parts > 1 the full dimension is split_parts equal parts (q, k, v) and the range
  // applies within each part; the local tensor is the parts' ranges stacked. For wte the local
  // tensor has Vp/tp rows of which the first split_end - split_begin are real, the rest padding.
  int split_begin = 0, split_end = 0;
  int split_parts = 1;
  bool decay = false;
  bool replicated_in_tp = true;  // same values on every tensor rank (split_dim == -1)
  size_t full_offset = 0;        // offset of the full tensor in Gpt's flat buffer
  int full_index = 0;            // its index in Gpt::param_table()

  size_t numel() const;
  size_t full_numel() const;
};

// The tensor table of a shard, without building one (e.g. rank 0 assembling the full model
// from the shards of other ranks). Throws std::invalid_argument as GptShard's constructor does.
std::vector<ShardTensor> shard_tensors(const GptConfig& config, const ShardSpec& spec);
// Gpt(config).num_params(), without allocating.
size_t full_num_params(const GptConfig& config);
// The vocabulary padded to a multiple of tp_degree.
int padded_vocab(int vocab_size, int tp_degree);

// Copies every tensor's slice from `shard_values` (a buffer in the shard's layout: params() or
// grads(), or one received from another rank) into `full` (Gpt's flat layout, full_num_params()
// floats) at its place. Padding rows are not copied; the rest of `full` is untouched.
void scatter_into_full(const std::vector<ShardTensor>& tensors, const float* shard_values,
                       float* full);
// The inverse: fills `shard_values` (the shard's layout) from `full`; padding rows become 0.
void extract_from_full(const std::vector<ShardTensor>& tensors, const float* full,
                       float* shard_values);

// The units (param_units.h) that tile a shard with these tensors, in order, the tensors of
// each, and the most
// elements of tensor-parallel replicated tensors (split_dim -1) in one unit: the size of the
// staging where a tensor-parallel shard packs their gradients for the allreduce.
struct ShardUnitTable {
  std::vector<ParamUnit> units;
  std::vector<std::pair<size_t, size_t>> tensors;  // per unit: its tensors [first, end)
  size_t replicated_max = 0;
};
ShardUnitTable shard_units(const std::vector<ShardTensor>& tensors);

// Floats of what a shard lays out for a microbatch of (B, T), as forward() does, all in
// (device, activations): the backward workspace (the stream's gradients, the block's scratch,
// the head's gradients and loss statistics) and, when checkpointing, the recompute area
// (min(checkpoint_every, blocks) blocks' activations). The activation slots are
// shard_activations.h's slot_floats. Both only grow with B and T. Placement planners size a
// run with these without building it.
struct ShardWorkspace {
  size_t workspace = 0;
  size_t recompute = 0;
};
ShardWorkspace shard_workspace_floats(const GptConfig& config, const ShardSpec& spec,
                                      const ActivationPolicy& policy, int B, int T);

class ActivationSlot;  // shard_activations.h

// Whether a new shard's parameter and gradient buffers start committed (zero-filled and
// accounted) or released (reserved only; commit a range before using it). Both committed by
// default. ZeRO-2/3 build the gradients released, ZeRO-3 the parameters too (DeepSpeed's
// zero.Init): the runtime commits what it keeps, range by range.
struct StorageOptions {
  bool params_committed = true;
  bool grads_committed = true;
};

class GptShard {
 public:
  // Builds the tensor table and the units and allocates params and grads, each zero-filled and
  // fully committed or wholly released as storage says (call init_parameters, or
  // init_unit_parameters per committed unit, next). ops is used only when spec.tp_degree > 1
  // (both functions required then). Every buffer is accounted in tracker (nullptr:
  // memory_tracker()), which must outlive the shard. Throws std::invalid_argument with
  // config.validate()'s or spec.validate()'s message.
  GptShard(const GptConfig& config, const ShardSpec& spec, TensorParallelOps ops,
           MemoryTracker* tracker = nullptr, StorageOptions storage = {});
  ~GptShard();
  GptShard(const GptShard&) = delete;
  GptShard& operator=(const GptShard&) = delete;
  GptShard(GptShard&&) noexcept;
  GptShard& operator=(GptShard&&) noexcept;

  const GptConfig& config() const { return config_; }
  const ShardSpec& spec() const { return spec_; }
  float* params() { return params_.data(); }
  const float* params() const { return params_.data(); }
  float* grads() { return grads_.data(); }
  const float* grads() const { return grads_.data(); }
  size_t num_params() const { return params_.size(); }
  // The buffers behind params() and grads(), for a runtime that releases and commits element
  // ranges (ZeRO); the addresses never change.
  TrackedBuffer& param_storage() { return params_; }
  TrackedBuffer& grad_storage() { return grads_; }
  MemoryTracker& tracker() const { return *tracker_; }
  // In buffer order; the offsets tile [0, num_params()) without gaps.
  const std::vector<ShardTensor>& tensors() const { return tensors_; }
  // The units of param_units.h, in buffer order; they tile [0, num_params()) without gaps.
  const std::vector<ParamUnit>& units() const { return units_; }
  // The hooks forward and backward call (nullptr: none). Not owned; must outlive their use.
  void set_unit_hooks(UnitHooks* hooks) { hooks_ = hooks; }
  UnitHooks* unit_hooks() const { return hooks_; }

  // What forward keeps for backward (activation_policy.h). Drops every slot and the recompute
  // area (the next forward lays them out again); a forward still in a slot (forward-only
  // validation leaves one) is dropped with it, and its backward would throw std::logic_error.
  // Throws std::invalid_argument naming the field, its value and the valid range for a bad
  // policy (and changes nothing then).
  void set_activation_policy(const ActivationPolicy& policy);
  const ActivationPolicy& activation_policy() const { return policy_; }
  // One byte per parameter: 1 where weight decay applies (ShardTensor::decay), else 0.
  std::vector<uint8_t> decay_mask() const;
  // This rank's vocabulary rows (all of them, begin 0, when tp_degree is 1).
  const VocabSlice& vocab() const { return vocab_; }

  // Values equal to the matching slice of Gpt(config).init_parameters(seed): each full tensor
  // is generated from Gpt's per-tensor stream and this shard's part kept (padding rows 0).
  // Does not touch grads. Writes every element; throws std::logic_error naming the released
  // count if params are not fully committed (use init_unit_parameters then).
  void init_parameters(uint64_t seed);
  // The same values for unit `unit` of units() only: writes exactly [offset, offset + count)
  // of that unit, bit for bit what init_parameters writes there. The caller commits the range
  // first. Throws std::invalid_argument for unit outside 0..units().size()-1, std::logic_error
  // if the unit's range is not committed; each names the shard, the unit and the range.
  void init_unit_parameters(uint64_t seed, int unit);
  // Sets every committed gradient element to 0 (released ranges are left alone, never read or
  // written).
  void zero_grad();

  // Activation slots: forward/backward of several microbatches may be in flight (1F1B keeps up
  // to p of them); slot is 0..num_slots()-1 or the next one (it grows on demand), chosen by the
  // caller. A forward into a slot still holding one overwrites it (forward-only validation).
  // Both passes call the unit hooks (if set) in param_units.h's order; under offloading a
  // slot's checkpointed inputs sit in the host pool from the forward until their backward.
  //
  // Forward of one microbatch (B rows of T tokens). If spec.embed: reads tokens (B,T) in
  // [0, vocab_size), else reads input (B,T,C) (copied). If spec.head: targets (B,T) required
  // (< vocab_size, < 0 to ignore), returns the mean loss over the positions with target >= 0
  // of this microbatch (0 if none); else writes output (B,T,C) and returns 0.
  // With tp_degree > 1 every tensor rank calls it with the same slot, B, T, tokens and targets.
  // Throws std::invalid_argument for slot < 0 or > num_slots(), B < 1, T outside
  // 1..max_seq_len, a missing pointer, or a token/target out of range.
  float forward(int slot, const int32_t* tokens, const float* input, const int32_t* targets,
                int B, int T, float* output);
  // Backward of the microbatch in `slot`: if spec.head, starts from the loss scaled by
  // loss_scale (the caller passes 1/num_microbatches), else from grad_output (B,T,C).
  // ACCUMULATES parameter gradients. If !spec.embed writes grad_input (B,T,C). Frees the slot.
  // A head whose microbatch had no targets adds nothing (grad_input is then 0); it still makes
  // every hook call, so all data-parallel ranks call the hooks alike.
  // Throws std::logic_error if the slot holds no forward, std::invalid_argument for a missing
  // pointer.
  void backward(int slot, const float* grad_output, float* grad_input, float loss_scale);

  int num_slots() const { return static_cast<int>(slots_.size()); }
  // Positions with a target in the slot's forward (head only; 0 otherwise).
  size_t num_targets(int slot) const;

 private:
  TpGroup tp() const { return TpGroup{spec_.tp_degree, spec_.tp_rank, &ops_}; }
  TpBlockDims dims(int B, int T) const { return {B, T, config_.n_embd, config_.n_head}; }
  std::string where(const char* function) const;  // "GptShard::forward (blocks 0-1 ...)"
  void check_forward_args(int slot, const int32_t* tokens, const float* input,
                          const int32_t* targets, int B, int T, float* output) const;
  void layout_workspace(int B, int T);
  // Writes tensors_[k]'s values (tp_partition.cpp); full: scratch for the full tensor.
  void init_tensor(uint64_t seed, size_t k, std::vector<float>& full);
  // Blocks per checkpointed group (checkpoint_every; 1 without checkpointing). Group g holds
  // the shard's blocks [g*N, min(n, (g+1)*N)) (local indices).
  int group_size() const;
  void recompute_group(ActivationSlot& s, int first, int end, bool compute);
  void backward_head(ActivationSlot& s, float* dcur, float loss_scale, bool compute);
  void backward_blocks(ActivationSlot& s, float*& dcur, float*& dnext, bool compute);
  void backward_embedding(ActivationSlot& s, const float* dcur, bool compute);
  // Units (gpt_shard_units.cpp): the table, the hook calls and the per-unit tp sync.
  void build_units();
  void acquire(int unit, UnitPhase phase) {
    if (hooks_ != nullptr) hooks_->acquire(unit, phase);
  }
  void release(int unit, UnitPhase phase) {
    if (hooks_ != nullptr) hooks_->release(unit, phase);
  }
  // The tensor-parallel sync of the unit's replicated gradients (if sync), then
  // gradient_ready(unit).
  void finish_unit(int unit, bool sync);

  GptConfig config_;
  ShardSpec spec_;
  TensorParallelOps ops_;
  MemoryTracker* tracker_ = nullptr;
  VocabSlice vocab_;
  std::vector<ShardTensor> tensors_;
  TrackedBuffer params_;
  TrackedBuffer grads_;
  size_t wte_ = 0, wpe_ = 0, lnf_w_ = 0, lnf_b_ = 0;
  std::vector<TpBlockOffsets> blocks_;  // blocks_[i]: block first_block + i

  std::vector<ParamUnit> units_;
  std::vector<std::pair<size_t, size_t>> unit_tensors_;  // per unit: [first, end) in tensors_
  int unit_wte_ = -1, unit_wpe_ = -1, unit_block0_ = -1, unit_lnf_ = -1, unit_head_wte_ = -1;
  UnitHooks* hooks_ = nullptr;

  ActivationPolicy policy_;
  std::vector<std::unique_ptr<ActivationSlot>> slots_;

  // backward workspace and recompute area, shared by the slots (one pass at a time)
  TrackedBuffer work_;
  float *dstream_a_ = nullptr, *dstream_b_ = nullptr, *dres2_ = nullptr, *dlnf_ = nullptr;
  float *dlogits_ = nullptr, *ce_stats_ = nullptr;
  TpBlockScratch scratch_{};
  TrackedBuffer recompute_;                // checkpointing: group_size() blocks' activations
  std::vector<TpBlockActs> recompute_acts_;
  TrackedBuffer replicated_;  // packed replicated gradients of one unit, for their allreduce
};

}  // namespace plexus::engine
