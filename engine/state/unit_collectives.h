// unit_collectives.h - the sharding plugin's two data-group collectives (plugin ABI v3
// reduce_scatter and all_gather) applied to one parameter unit under its UnitPartition.
//
// The plugin's collectives move |D| equal parts; a unit whose count_u is not a multiple of |D|
// goes through a padded staging buffer of |D| * s_u floats (device, communication), zero past
// count_u:
//   reduce-scatter  the unit's full gradient (count_u floats) -> this rank's part, averaged
//                   over the data group (s_u floats; only `owned` of them are real). Straight
//                   from the gradient when the unit divides evenly, else staged.
//   all-gather      this rank's owned elements -> the whole unit (count_u floats). In place
//                   when the owned elements already sit at their place in the unit and it
//                   divides evenly (ZeRO-1/2: the parameters are a full buffer); straight into
//                   the unit when it divides evenly; else staged.
// A non-blocking all-gather (ZeRO-3 prefetch) is a PendingGather: the unit's buffer (and its
// staging) must stay untouched until finish(). Every rank of the data group makes the same
// calls in the same order (the plugin's rule).
//
// Errors: a failing hook throws CommFailure carrying its code and message. Thread safety: none.
#pragma once

#include <cstddef>
#include <memory>

#include "engine/memory/memory_tracker.h"
#include "engine/memory/tracked_buffer.h"
#include "engine/state/unit_partition.h"
#include "plexus/plugin.h"

namespace plexus::engine {

// A started non-blocking all-gather; finish() waits for it and copies a staged result into
// place. The destructor of an unfinished one waits (ignoring the result), so the memory it
// writes outlives it.
class PendingGather {
 public:
  PendingGather() = default;
  ~PendingGather();
  PendingGather(PendingGather&& other) noexcept;
  PendingGather& operator=(PendingGather&& other) noexcept;
  PendingGather(const PendingGather&) = delete;
  PendingGather& operator=(const PendingGather&) = delete;

  bool active() const { return request_ != nullptr || staged_; }
  // Waits and completes the unit. Throws CommFailure if the gather failed.
  void finish();

 private:
  friend class UnitCollectives;
  plx_request_t request_ = nullptr;
  bool staged_ = false;
  TrackedBuffer staging_;  // |D| * s_u floats when the unit is padded
  float* full_ = nullptr;  // where the unit goes
  size_t count_ = 0;       // count_u
  const char* plugin_ = "";
};

// The sharding plugin's two hooks (plugin ABI v3), its state and its name (for messages).
struct ShardingHooks {
  decltype(plx_plugin_t::reduce_scatter) reduce_scatter = nullptr;
  decltype(plx_plugin_t::all_gather) all_gather = nullptr;
  void* state = nullptr;
  const char* name = "";
};

class UnitCollectives {
 public:
  // hooks: both non-null, their state valid while this object lives; degree and rank: this
  // rank's data-parallel degree and coordinate; tracker: where staging buffers are accounted;
  // world_rank: for messages. Throws std::invalid_argument for a missing hook.
  UnitCollectives(const ShardingHooks& hooks, int degree, int rank, int world_rank,
                  MemoryTracker& tracker);

  int degree() const { return degree_; }
  int rank() const { return rank_; }

  // full: the unit's gradient (count_u floats); part_out: s_u floats receiving this rank's part
  // averaged over the group (must not overlap full).
  void reduce_scatter(const float* full, const UnitSlice& s, float* part_out);
  // As reduce_scatter, then adds the owned elements into accumulate (owned floats).
  void reduce_scatter_add(const float* full, const UnitSlice& s, float* accumulate);
  // As reduce_scatter, then writes the owned elements back over their place in full
  // (full + begin); the rest of full keeps this rank's own, unaveraged values.
  void reduce_scatter_in_place(float* full, const UnitSlice& s);
  // own: this rank's owned elements; full: the unit's buffer (count_u floats) to fill.
  void all_gather(const float* own, const UnitSlice& s, float* full);
  // The non-blocking form (the plugin's all_gather with a request).
  PendingGather start_all_gather(const float* own, const UnitSlice& s, float* full);

 private:
  // Scratch of at least n floats (device, communication), kept between calls.
  float* scratch(TrackedBuffer& buffer, size_t n);
  void check(plx_result_t r, const char* err) const;

  ShardingHooks hooks_;
  int degree_, rank_;
  MemoryTracker& tracker_;
  TrackedBuffer padded_;  // |D| * s_u for a padded unit
  TrackedBuffer part_;    // s_u for reduce_scatter_add
};

}  // namespace plexus::engine
