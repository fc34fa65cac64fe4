// communicator_peers.cpp - the peer-memory segment of a communicator whose ranks share a host.
//
// Made after the endpoints are connected (world: after the cost model's parameters; split: after
// the child's barrier), with every rank's vote: a rank with PLEXUS_SHM=0, or one that cannot
// map the segment, leaves the whole communicator without it, so every rank chooses algorithms
// alike. The cost model then knows (CostShape::peer_memory) whether the shm algorithms run.
#include <optional>

#include "comm/core/communicator.h"
#include "comm/core/config.h"
#include "comm/core/error.h"
#include "comm/core/log.h"

namespace plexus::comm {

plx_result_t open_peer_memory(plx_comm* comm) {
  comm->peers.reset();
  comm->cost_shape.peer_memory = false;
  if (comm->size < 2 || comm->hosts.host_count() != 1) return PLX_SUCCESS;
  std::optional<int64_t> enabled;
  PLX_CHECK(config_integer("PLEXUS_SHM", 0, 1, &enabled));
  PLX_CHECK(PeerMemory::open(*comm->transport, comm->next_tag_base(), enabled.value_or(1) != 0,
                             comm->chunk_bytes, comm->timeout_ms, comm->async, &comm->peers));
  comm->cost_shape.peer_memory = comm->peers != nullptr;
  if (comm->peers) {
    log_message(LogLevel::Info, "rank {}: peer memory: {} ranks, slots of 2 x {} bytes",
                comm->rank, comm->size, comm->peers->slot_bytes());
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
