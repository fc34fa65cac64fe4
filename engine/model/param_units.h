// param_units.h - the units in which a GptShard's parameters are gathered, freed and reduced,
// and the hooks through which the engine's sharding and offloading runtime follows the forward
// and backward passes (as DeepSpeed's ZeRO-3 module hooks do).
//
// Units tile a shard's flat buffer in order, each one or more whole tensors:
//   "wte", "wpe"         if the shard embeds (spec.embed)
//   "blocks.<i>"         one per block, its 12 tensors
//   "ln_f"               if the shard holds the head (ln_f.weight and ln_f.bias)
//   "wte"                if the shard holds the head but does not embed (its copy of the tied
//                        weight; the same size and tensor-parallel slice as the first stage's)
// so a unit's partition over the data-parallel ranks is the same wherever the unit occurs.
//
// Order of calls within one microbatch (u = unit index in units()):
//   forward:  acquire(wte, F) acquire(wpe, F) <embedding> release(wpe, F) release(wte, F)
//             for each block i: acquire(i, F) <block> release(i, F)
//             acquire(ln_f, F) acquire(wte, F) <head> release(wte, F) release(ln_f, F)
//   backward: acquire(ln_f, B) acquire(wte, B) <head> release(wte, B) release(ln_f, B)
//             gradient_ready(ln_f) [and gradient_ready(wte) if the shard does not embed]
//             for each block i, last first: acquire(i, B) <block> release(i, B)
//                                           gradient_ready(i)
//             acquire(wte, B) acquire(wpe, B) <embedding> release(wpe, B) release(wte, B)
//             gradient_ready(wte) gradient_ready(wpe)
// With activation checkpointing the backward of a block group first runs the group's forward
// again: acquire(i, R) <block> release(i, R) for each block of the group, then the backward
// calls above. acquire() must leave the unit's parameters readable at their offsets in
// params(); in the backward it must also leave the unit's gradient range writable, holding the
// sum so far (the shard adds to it). gradient_ready(u) says the unit's gradient for this
// microbatch is complete: the tensor-parallel sync of its replicated tensors is done, and the
// shard will not touch that gradient range again until the next acquire(u, B).
#pragma once

#include <cstddef>
#include <string>

namespace plexus::engine {

struct ParamUnit {
  std::string name;   // "wte", "wpe", "blocks.3", "ln_f"
  size_t offset = 0;  // in the shard's flat parameter (and gradient) buffer, elements
  size_t count = 0;   // elements
};

enum class UnitPhase { kForward, kBackward, kRecompute };

class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void acquire(int unit, UnitPhase phase) = 0;
  virtual void release(int unit, UnitPhase phase) = 0;
  virtual void gradient_ready(int unit) = 0;
};

}  // namespace plexus::engine
