// unit_collectives.cpp - one unit's reduce-scatter and all-gather through the sharding plugin,
// padded when the unit does not divide over the data group (see unit_collectives.h).
#include "engine/state/unit_collectives.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/world/world.h"

namespace plexus::engine {

PendingGather::~PendingGather() {
  if (request_ != nullptr) plx_wait(request_);  // the memory it writes must outlive it
}

PendingGather::PendingGather(PendingGather&& other) noexcept { *this = std::move(other); }

PendingGather& PendingGather::operator=(PendingGather&& other) noexcept {
  if (this == &other) return *this;
  if (request_ != nullptr) plx_wait(request_);
  request_ = std::exchange(other.request_, nullptr);
  staged_ = std::exchange(other.staged_, false);
  staging_ = std::move(other.staging_);
  full_ = other.full_;
  count_ = other.count_;
  plugin_ = other.plugin_;
  return *this;
}

void PendingGather::finish() {
  if (request_ != nullptr) {
    const plx_result_t r = plx_wait(std::exchange(request_, nullptr));
    if (r != PLX_SUCCESS) {
      staged_ = false;
      staging_ = TrackedBuffer();
      throw CommFailure(r, std::string(plugin_) + ": prefetched parameter all-gather of " +
                               std::to_string(count_) + " elements: " +
                               plx_get_error_string(r) + ": " + plx_get_last_error(nullptr));
    }
  }
  if (staged_) std::memcpy(full_, staging_.data(), count_ * sizeof(float));
  staged_ = false;
  staging_ = TrackedBuffer();
}

UnitCollectives::UnitCollectives(const ShardingHooks& hooks, int degree, int rank,
                                 int world_rank, MemoryTracker& tracker)
    : hooks_(hooks), degree_(degree), rank_(rank), tracker_(tracker) {
  if (hooks.reduce_scatter == nullptr || hooks.all_gather == nullptr) {
    throw std::invalid_argument("UnitCollectives: rank " + std::to_string(world_rank) +
                                ": plugin '" + hooks.name +
                                "' lacks reduce_scatter or all_gather");
  }
}

// The plugin's message names the plugin, its rank and the cause; the trainer adds the world rank.
void UnitCollectives::check(plx_result_t r, const char* err) const {
  if (r != PLX_SUCCESS) {
    throw CommFailure(r, err[0] != '\0' ? std::string(err)
                                        : std::string(hooks_.name) + ": error " +
                                              std::to_string(static_cast<int>(r)) +
                                              " with no message");
  }
}

float* UnitCollectives::scratch(TrackedBuffer& buffer, size_t n) {
  if (buffer.size() < n) {
    buffer = TrackedBuffer();  // give back the old one before taking the new one
    buffer = TrackedBuffer(n, MemoryPool::kDevice, MemoryCategory::kCommunication, true,
                           &tracker_);
  }
  return buffer.data();
}

void UnitCollectives::reduce_scatter(const float* full, const UnitSlice& s, float* part_out) {
  const float* input = full;
  if (!s.even(degree_)) {
    float* padded = scratch(padded_, s.part * degree_);
    std::memcpy(padded, full, s.unit_count * sizeof(float));
    std::fill(padded + s.unit_count, padded + s.part * degree_, 0.0f);
    input = padded;
  }
  char err[512] = {};
  check(hooks_.reduce_scatter(hooks_.state, input, part_out, s.part, err, sizeof(err)),
        err);
}

void UnitCollectives::reduce_scatter_add(const float* full, const UnitSlice& s,
                                         float* accumulate) {
  float* part = scratch(part_, s.part);
  reduce_scatter(full, s, part);
  for (size_t i = 0; i < s.owned; ++i) accumulate[i] += part[i];
}

void UnitCollectives::reduce_scatter_in_place(float* full, const UnitSlice& s) {
  float* part = scratch(part_, s.part);
  reduce_scatter(full, s, part);
  std::memcpy(full + s.begin, part, s.owned * sizeof(float));
}

void UnitCollectives::all_gather(const float* own, const UnitSlice& s, float* full) {
  char err[512] = {};
  auto gather = hooks_.all_gather;
  if (s.even(degree_)) {
    // In place (own == full + begin) or straight into the unit: the plugin's rule either way.
    check(gather(hooks_.state, own, full, s.part, nullptr, err, sizeof(err)), err);
    return;
  }
  float* padded = scratch(padded_, s.part * degree_);
  float* mine = padded + static_cast<size_t>(rank_) * s.part;
  std::memcpy(mine, own, s.owned * sizeof(float));
  std::fill(mine + s.owned, mine + s.part, 0.0f);
  check(gather(hooks_.state, mine, padded, s.part, nullptr, err, sizeof(err)), err);
  std::memcpy(full, padded, s.unit_count * sizeof(float));
}

PendingGather UnitCollectives::start_all_gather(const float* own, const UnitSlice& s,
                                                float* full) {
  PendingGather pending;
  pending.full_ = full;
  pending.count_ = s.unit_count;
  pending.plugin_ = hooks_.name;
  const float* send = own;
  float* receive = full;
  if (!s.even(degree_)) {
    pending.staging_ = TrackedBuffer(s.part * degree_, MemoryPool::kDevice,
                                     MemoryCategory::kCommunication, true, &tracker_);
    pending.staged_ = true;
    float* mine = pending.staging_.data() + static_cast<size_t>(rank_) * s.part;
    std::memcpy(mine, own, s.owned * sizeof(float));
    send = mine;
    receive = pending.staging_.data();
  }
  char err[512] = {};
  plx_request_t request = nullptr;
  check(hooks_.all_gather(hooks_.state, send, receive, s.part, &request, err, sizeof(err)),
        err);
  pending.request_ = request;
  return pending;
}

}  // namespace plexus::engine
