// shard_activations.h - one microbatch's forward activations in a GptShard (an activation slot),
// kept from its forward until its backward, under an ActivationPolicy (activation_policy.h).
//
// The slot's device buffer, in (device, activations) floats:
//   plain:          [x0 | block 0 | ... | block n-1 | head | tokens | targets]
//   checkpointing:  [in 0 | in 1 | ... | in G-1 | out | head | tokens | targets]
// x0 = in 0 (B,T,C): the embedding's output or a copy of the shard's input. block i: block i's
// TpBlockActs (tp_block.h). in g (B,T,C): the input of group g (block g*N), G = ceil(n/N).
// out (B,T,C), head only: the last block's output, ln_f's input (plain: block n-1's res3).
// head, head only: ln_f (B,T,C), its mean and rstd (B,T), logits and probs (B,T,Vl), losses
// (B,T). tokens (B,T) int32 if the shard embeds; targets (B,T) int32 if it holds the head.
// Checkpointing needs at least one block; a shard without blocks always keeps the plain layout.
//
// Offloading: a second buffer in (host, activations) mirrors [in 0 | ... | in G-1]. Each group's
// input is in at most one pool at a time and only there committed (accounted); the rest of the
// device buffer stays committed:
//
//   forward:   open_input(g) (device) -> offload(g) (host; device released)
//   backward:  fetch(g) (device; host released) -> drop(g) (device released)
//
// Without offloading open_input/offload/fetch/drop only return or do nothing: every input is
// always on the device.
//
// Errors: using an input that is not on the device throws std::logic_error (an engine bug).
// Thread safety: none; one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/memory/memory_tracker.h"
#include "engine/memory/tracked_buffer.h"
#include "engine/model/activation_policy.h"
#include "engine/model/tp_block.h"

namespace plexus::engine {

// What a slot is laid out for.
struct SlotShape {
  int B = 0, T = 0, C = 0, NH = 0;
  int tp_degree = 1;
  int num_blocks = 0;  // blocks of the shard
  int vocab_rows = 0;  // local LM-head columns (head only)
  bool embed = false, head = false;
  TpBlockDims dims() const { return {B, T, C, NH}; }
  bool operator==(const SlotShape&) const = default;
};

// The head's activations in a slot (head only; nullptr otherwise).
struct SlotHead {
  float *lnf = nullptr, *lnf_mean = nullptr, *lnf_rstd = nullptr;
  float *logits = nullptr, *probs = nullptr, *losses = nullptr;
};

// Floats of a slot's device buffer for shape under policy, all committed.
size_t slot_floats(const SlotShape& shape, const ActivationPolicy& policy);
// Group inputs the slot keeps: ceil(num_blocks / checkpoint_every) when checkpointing, else 1.
int slot_inputs(const SlotShape& shape, const ActivationPolicy& policy);

class ActivationSlot {
 public:
  explicit ActivationSlot(MemoryTracker* tracker) : tracker_(tracker) {}

  // Lays the slot out for a new forward, dropping what it held (inputs on the host included).
  // The device buffer is kept while it is big enough for the same policy (it grows only, as
  // the batch does), else allocated afresh.
  void prepare(const SlotShape& shape, const ActivationPolicy& policy);
  // Drops the inputs held in either pool (offloading); nothing otherwise.
  void discard();

  bool checkpointing() const { return checkpointing_; }
  bool offloading() const { return offloading_; }
  int num_inputs() const { return static_cast<int>(where_.size()); }

  // Group g's input (B,T,C) on the device. open_input first commits it (offloading), for the
  // forward to write; input requires it present.
  float* open_input(int g);
  float* input(int g);
  // Offloading: device -> host (offload), host -> device if not there (fetch), device
  // released (drop). g outside 0..num_inputs()-1 is ignored by fetch (the horizon may reach
  // before group 0).
  void offload(int g);
  void fetch(int g);
  void drop(int g);

  // Plain layout only: block i's activations.
  const TpBlockActs& block(int i) const { return blocks_[i]; }
  // ln_f's input: the last block's output (x0 without blocks).
  float* output() { return output_; }
  const SlotHead& head() const { return head_; }
  int32_t* tokens() { return tokens_; }
  int32_t* targets() { return targets_; }

  bool busy = false;  // holds a forward not yet consumed by backward
  int B = 0, T = 0;
  size_t num_targets = 0;

 private:
  enum class Where { kNowhere, kDevice, kHost };
  float* device_input(int g) { return acts_.data() + static_cast<size_t>(g) * input_floats_; }
  void check_group(const char* what, int g) const;

  MemoryTracker* tracker_;
  SlotShape shape_{};
  ActivationPolicy policy_{};
  bool laid_out_ = false, checkpointing_ = false, offloading_ = false;
  size_t input_floats_ = 0;  // B*T*C
  TrackedBuffer acts_;       // (device, activations)
  TrackedBuffer host_;       // (host, activations): offloaded inputs
  std::vector<Where> where_;  // per group input
  std::vector<TpBlockActs> blocks_;
  float* output_ = nullptr;
  SlotHead head_{};
  int32_t *tokens_ = nullptr, *targets_ = nullptr;
};

}  // namespace plexus::engine
