// zero_unit_hooks.h - the UnitHooks (param_units.h) through which ZeRO stages 2 and 3 follow a
// chunk's forward and backward passes, unit by unit (as DeepSpeed's stage-3 module hooks).
//
// Stage 2 (gradients sharded):
//   acquire(u, backward)  commits the unit's gradient range in grad_storage() (zero-filled)
//                         unless it is already committed (wte: head, then embedding);
//   gradient_ready(u)     reduce-scatters the unit's gradient (average over the data group),
//                         adds this rank's part to its shard gradient (so microbatches
//                         accumulate), and releases the range.
//   So the gradient bytes are the shard (sum_u s_u) plus the units whose backward is running.
// Stage 3 (parameters sharded too), in addition:
//   acquire(u, any)       gathers the unit's parameters into its range of param_storage()
//                         (all-gather of every rank's part) unless it is already gathered;
//                         units are counted, so nested acquires (wte) gather once;
//   release(u, any)       frees the range when the last holder lets go;
//   prefetch              with prefetch_units = K > 0, an acquire in the forward (backward)
//                         pass starts non-blocking gathers of the next K units the forward
//                         (backward) pass will use, in param_units.h's order; the acquire
//                         that needs one waits for it. Recompute acquires prefetch nothing.
//   persistence           units of at most param_persistence_threshold elements stay gathered
//                         all the time (their owned elements are stepped in place, not in the
//                         shard); after each step refresh_persistent() gathers them again.
// drain() completes and frees every prefetched unit (before the shards change in the step, and
// before a collective outside the passes).
//
// Every data rank runs the same passes, so the collectives line up. Errors: CommFailure from
// the collectives, std::logic_error for a call out of param_units.h's order.
#pragma once

#include <cstddef>
#include <vector>

#include "engine/model/gpt_shard.h"
#include "engine/model/param_units.h"
#include "engine/state/unit_collectives.h"
#include "engine/state/unit_partition.h"

namespace plexus::engine {

struct ZeroHookSettings {
  int stage = 2;                           // 2 or 3
  size_t param_persistence_threshold = 0;  // stage 3: units this small stay gathered
  int prefetch_units = 0;                  // stage 3
};

class ZeroUnitHooks : public UnitHooks {
 public:
  // grad_shard: the chunk's shard gradient (partition.shard_elements() floats); param_shard:
  // stage 3's shard parameters (same length), else nullptr. All must outlive the hooks.
  ZeroUnitHooks(GptShard& shard, const UnitPartition& partition, UnitCollectives& collectives,
                const ZeroHookSettings& settings, float* grad_shard, const float* param_shard);
  ~ZeroUnitHooks() override = default;

  void acquire(int unit, UnitPhase phase) override;
  void release(int unit, UnitPhase phase) override;
  void gradient_ready(int unit) override;

  // Stage 3: whether unit u stays gathered (then this rank's part of it is its owned elements
  // in params(), not the shard: the shard's range of a persistent unit is unused).
  bool persistent(int unit) const { return persistent_.at(static_cast<size_t>(unit)); }
  const std::vector<bool>& persistent_units() const { return persistent_; }
  // Stage 3: waits for every prefetch and frees its unit. Throws std::logic_error if a unit is
  // still acquired (called inside a pass).
  void drain();
  // Stage 3: all-gathers every persistent unit in place from the owned elements (after the
  // step).
  void refresh_persistent();

 private:
  const UnitSlice& slice(int unit) const { return partition_.slice(unit); }
  void check_unit(int unit, const char* what) const;
  void gather(int unit);
  void prefetch_after(int unit, UnitPhase phase);

  GptShard& shard_;
  const UnitPartition& partition_;
  UnitCollectives& collectives_;
  ZeroHookSettings settings_;
  float* grad_shard_;
  const float* param_shard_;
  std::vector<bool> grad_live_;      // gradient range committed
  std::vector<bool> persistent_;     // stage 3: always gathered
  std::vector<bool> gathered_;       // stage 3: parameters in place
  std::vector<int> holders_;         // stage 3: acquires not yet released
  std::vector<PendingGather> pending_;
  // The units in the order the forward and the backward pass acquire them (param_units.h), and
  // where in each the last acquire was.
  std::vector<int> forward_order_, backward_order_;
  int forward_at_ = -1, backward_at_ = -1;
};

}  // namespace plexus::engine
