// zero_unit_hooks.cpp - ZeRO-2/3's per-unit gradient reduce-scatter and parameter gather, with
// prefetch and persistent units (see zero_unit_hooks.h).
#include "engine/state/zero_unit_hooks.h"

#include <stdexcept>
#include <string>

namespace plexus::engine {

ZeroUnitHooks::ZeroUnitHooks(GptShard& shard, const UnitPartition& partition,
                             UnitCollectives& collectives, const ZeroHookSettings& settings,
                             float* grad_shard, const float* param_shard)
    : shard_(shard), partition_(partition), collectives_(collectives), settings_(settings),
      grad_shard_(grad_shard), param_shard_(param_shard) {
  const std::vector<ParamUnit>& units = shard.units();
  const size_t n = units.size();
  grad_live_.assign(n, false);
  persistent_.assign(n, settings.stage < 3);
  gathered_.assign(n, settings.stage < 3);
  holders_.assign(n, 0);
  pending_.resize(n);
  for (size_t u = 0; u < n && settings.stage == 3; ++u) {
    persistent_[u] = units[u].count <= settings.param_persistence_threshold;
    gathered_[u] = persistent_[u];
  }
  for (size_t u = 0; u < n; ++u) {
    grad_live_[u] = shard.grad_storage().is_committed(units[u].offset, units[u].count);
  }
  // param_units.h's order: [wte wpe] blocks [ln_f wte] forward, the reverse backward.
  std::vector<int> blocks;
  int wte = -1, wpe = -1, lnf = -1, head_wte = -1;
  for (size_t u = 0; u < n; ++u) {
    const std::string& name = units[u].name;
    const int i = static_cast<int>(u);
    if (name.rfind("blocks.", 0) == 0) blocks.push_back(i);
    if (name == "wpe") wpe = i;
    if (name == "ln_f") lnf = i;
    if (name == "wte") (shard.spec().embed && u == 0 ? wte : head_wte) = i;
  }
  if (shard.spec().embed && shard.spec().head) head_wte = wte;
  if (shard.spec().embed) forward_order_ = {wte, wpe};
  forward_order_.insert(forward_order_.end(), blocks.begin(), blocks.end());
  if (shard.spec().head) forward_order_.insert(forward_order_.end(), {lnf, head_wte});
  if (shard.spec().head) backward_order_ = {lnf, head_wte};
  backward_order_.insert(backward_order_.end(), blocks.rbegin(), blocks.rend());
  if (shard.spec().embed) backward_order_.insert(backward_order_.end(), {wte, wpe});
}

void ZeroUnitHooks::check_unit(int unit, const char* what) const {
  if (unit < 0 || unit >= partition_.num_units()) {
    throw std::logic_error("ZeroUnitHooks::" + std::string(what) + ": unit " +
                           std::to_string(unit) + " not in 0.." +
                           std::to_string(partition_.num_units() - 1));
  }
}

void ZeroUnitHooks::gather(int unit) {
  const UnitSlice& s = slice(unit);
  float* full = shard_.params() + s.unit_offset;
  if (pending_[unit].active()) {
    pending_[unit].finish();
  } else {
    shard_.param_storage().commit(s.unit_offset, s.unit_count);
    collectives_.all_gather(param_shard_ + s.shard_offset, s, full);
  }
  gathered_[unit] = true;
}

// Starts the gathers of the next prefetch_units non-persistent units of the pass after `unit`.
void ZeroUnitHooks::prefetch_after(int unit, UnitPhase phase) {
  const std::vector<int>& order = phase == UnitPhase::kForward ? forward_order_ : backward_order_;
  int& at = phase == UnitPhase::kForward ? forward_at_ : backward_at_;
  // Where this acquire is in the pass: the first place of `unit` after the last acquire, or
  // its first place (a new microbatch).
  int here = -1;
  for (int k = 0; k < static_cast<int>(order.size()); ++k) {
    if (order[k] != unit) continue;
    if (here < 0) here = k;
    if (k > at) {
      here = k;
      break;
    }
  }
  if (here < 0) return;  // not a unit of this pass's order
  at = here;
  int ahead = 0;
  for (int k = here + 1; k < static_cast<int>(order.size()) && ahead < settings_.prefetch_units;
       ++k) {
    const int next = order[k];
    if (next == unit || persistent_[next]) continue;
    ++ahead;
    if (gathered_[next] || pending_[next].active()) continue;
    const UnitSlice& s = slice(next);
    shard_.param_storage().commit(s.unit_offset, s.unit_count);
    pending_[next] = collectives_.start_all_gather(param_shard_ + s.shard_offset, s,
                                                   shard_.params() + s.unit_offset);
  }
}

void ZeroUnitHooks::acquire(int unit, UnitPhase phase) {
  check_unit(unit, "acquire");
  if (settings_.stage == 3 && !persistent_[unit]) {
    if (!gathered_[unit]) gather(unit);
    ++holders_[unit];
    if (settings_.prefetch_units > 0 && phase != UnitPhase::kRecompute) {
      prefetch_after(unit, phase);
    }
  }
  if (phase == UnitPhase::kBackward && !grad_live_[unit]) {
    const UnitSlice& s = slice(unit);
    shard_.grad_storage().commit(s.unit_offset, s.unit_count);
    grad_live_[unit] = true;
  }
}

void ZeroUnitHooks::release(int unit, UnitPhase) {
  check_unit(unit, "release");
  if (settings_.stage < 3 || persistent_[unit]) return;
  if (holders_[unit] <= 0) {
    throw std::logic_error("ZeroUnitHooks::release: unit " + std::to_string(unit) + " ('" +
                           shard_.units()[unit].name + "') released more often than acquired");
  }
  if (--holders_[unit] > 0) return;
  const UnitSlice& s = slice(unit);
  shard_.param_storage().release(s.unit_offset, s.unit_count);
  gathered_[unit] = false;
}

void ZeroUnitHooks::gradient_ready(int unit) {
  check_unit(unit, "gradient_ready");
  if (!grad_live_[unit]) {
    throw std::logic_error("ZeroUnitHooks::gradient_ready: unit " + std::to_string(unit) +
                           " ('" + shard_.units()[unit].name +
                           "') has no gradient (no acquire in the backward pass before)");
  }
  const UnitSlice& s = slice(unit);
  collectives_.reduce_scatter_add(shard_.grads() + s.unit_offset, s,
                                  grad_shard_ + s.shard_offset);
  shard_.grad_storage().release(s.unit_offset, s.unit_count);
  grad_live_[unit] = false;
}

void ZeroUnitHooks::drain() {
  for (int u = 0; u < partition_.num_units(); ++u) {
    if (holders_[u] > 0) {
      throw std::logic_error("ZeroUnitHooks::drain: unit " + std::to_string(u) + " ('" +
                             shard_.units()[u].name + "') is still acquired");
    }
    if (!pending_[u].active()) continue;
    pending_[u].finish();
    const UnitSlice& s = slice(u);
    shard_.param_storage().release(s.unit_offset, s.unit_count);
  }
  forward_at_ = backward_at_ = -1;
}

void ZeroUnitHooks::refresh_persistent() {
  if (settings_.stage < 3) return;
  for (int u = 0; u < partition_.num_units(); ++u) {
    if (!persistent_[u]) continue;
    const UnitSlice& s = slice(u);
    collectives_.all_gather(shard_.params() + s.full_begin(), s, shard_.params() + s.unit_offset);
  }
}

}  // namespace plexus::engine
