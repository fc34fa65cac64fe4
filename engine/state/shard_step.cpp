// shard_step.cpp - AdamW over a rank's owned elements, on the device or on host copies (see
// shard_step.h).
#include "engine/state/shard_step.h"

#include <cstring>

#include "engine/memory/tracked_buffer.h"

namespace plexus::engine {

namespace {

// adamw_step on one piece, with the tensor's weight decay; on the host (adamw_step_host) for
// the offloaded step, whose arrays are host memory whatever the compute device.
void step_piece(const ShardTensor& t, float* p, const float* g, float* m, float* v, size_t n,
                int64_t step, const AdamWConfig& config, bool on_host) {
  AdamWConfig c = config;
  if (!t.decay) c.weight_decay = 0.0f;
  if (on_host) {
    adamw_step_host(p, g, m, v, n, step, c, nullptr);
  } else {
    adamw_step(p, g, m, v, n, step, c, nullptr);
  }
}

// Where unit u's owned parameters are: its full-space elements, or the shard.
float* params_at(const StepBuffers& b, int unit, size_t full, size_t shard) {
  if (!b.params_in_shard) return b.params + full;
  if (b.whole_units != nullptr && (*b.whole_units)[unit]) return b.whole_params + full;
  return b.params + shard;
}

}  // namespace

void adamw_owned(const std::vector<ShardTensor>& tensors, const UnitPartition& partition,
                 const StepBuffers& b, int64_t step, const AdamWConfig& config, bool offload,
                 MemoryTracker& tracker) {
  if (!offload) {
    for_each_owned_piece(tensors, partition,
                         [&](int unit, const ShardTensor& t, size_t full, size_t shard, size_t n) {
                           float* p = params_at(b, unit, full, shard);
                           const float* g = b.grads + (b.grads_in_shard ? shard : full);
                           step_piece(t, p, g, b.m + shard, b.v + shard, n, step, config,
                                      false);
                         });
    return;
  }
  // ZeRO-Offload's step: gradient and parameters to the host, AdamW there, parameters back.
  const size_t count = partition.shard_elements();
  TrackedBuffer host_params(count, MemoryPool::kHost, MemoryCategory::kCommunication, true,
                            &tracker);
  TrackedBuffer host_grads(count, MemoryPool::kHost, MemoryCategory::kCommunication, true,
                           &tracker);
  for (int u = 0; u < partition.num_units(); ++u) {
    const UnitSlice& s = partition.slice(u);
    const size_t full = s.full_begin(), shard = s.shard_offset, bytes = s.owned * sizeof(float);
    std::memcpy(host_params.data() + shard, params_at(b, u, full, shard), bytes);
    std::memcpy(host_grads.data() + shard, b.grads + (b.grads_in_shard ? shard : full), bytes);
  }
  for_each_owned_piece(tensors, partition,
                       [&](int, const ShardTensor& t, size_t, size_t shard, size_t n) {
                         step_piece(t, host_params.data() + shard, host_grads.data() + shard,
                                    b.m + shard, b.v + shard, n, step, config, true);
                       });
  for (int u = 0; u < partition.num_units(); ++u) {
    const UnitSlice& s = partition.slice(u);
    const size_t full = s.full_begin(), shard = s.shard_offset;
    std::memcpy(params_at(b, u, full, shard), host_params.data() + shard,
                s.owned * sizeof(float));
  }
}

}  // namespace plexus::engine
