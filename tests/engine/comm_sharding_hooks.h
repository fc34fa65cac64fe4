// comm_sharding_hooks.h - the two ZeRO sharding hooks (engine::ShardingHooks' reduce_scatter and
// all_gather) over a real communicator, the plx_comm_t passed as the hooks' state: a float32
// reduce-scatter with PLX_AVG, and an allgather (non-blocking when a request is asked for). On
// failure each writes "test: <the communicator's last error>" into err and returns the code.
#pragma once

#include <cstddef>
#include <cstdio>

#include "plexus/plexus.h"

namespace plexus::test {

inline plx_result_t comm_reduce_scatter(void* state, const float* full, float* shard,
                                        size_t count, char* err, size_t err_len) {
  auto comm = static_cast<plx_comm_t>(state);
  plx_result_t r = plx_reduce_scatter(full, shard, count, PLX_FLOAT32, PLX_AVG, comm, nullptr);
  if (r != PLX_SUCCESS) std::snprintf(err, err_len, "test: %s", plx_get_last_error(comm));
  return r;
}

inline plx_result_t comm_all_gather(void* state, const float* shard, float* full, size_t count,
                                    plx_request_t* request, char* err, size_t err_len) {
  auto comm = static_cast<plx_comm_t>(state);
  plx_result_t r = request == nullptr
                       ? plx_allgather(shard, full, count, PLX_FLOAT32, comm, nullptr)
                       : plx_iallgather(shard, full, count, PLX_FLOAT32, comm, request);
  if (r != PLX_SUCCESS) std::snprintf(err, err_len, "test: %s", plx_get_last_error(comm));
  return r;
}

}  // namespace plexus::test
