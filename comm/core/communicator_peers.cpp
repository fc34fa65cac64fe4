// communicator_peers.cpp - the peer-memory segments of a communicator: one for the whole
// communicator when its ranks share a host (the shm algorithms), else one per host that has
// several ranks (the intra-host phases of the hierarchical algorithms).
//
// Made after the endpoints are connected (world: after the cost model's parameters; split: after
// the child's barrier), with every rank's vote: a rank with PLEXUS_SHM=0, or one that cannot
// map its segment, leaves the whole communicator without any, so every rank chooses algorithms
// alike. The cost model then knows (CostShape::peer_memory) whether the segments exist.
//
//   one host        PeerMemory::open over every rank (its own last message is the vote)
//   several hosts   1. each host's ranks open their own segment (PeerMemory::open over the
//                      host's ranks; a host of one rank has none and votes PLEXUS_SHM alone)
//                   2. the votes go to rank 0 (tag_base | 3), which sends back the verdict
//                      (tag_base | 4): unless every rank succeeded, every rank drops its segment
#include <memory>
#include <optional>
#include <vector>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"

namespace plexus::comm {
namespace {

// Every rank's `mine` reduced by AND through rank 0: *all on every rank.
plx_result_t agree(Transport& transport, uint64_t tag_base, bool mine, bool* all) {
  const int n = transport.size(), rank = transport.rank();
  unsigned char verdict = mine ? 1 : 0;
  if (rank == 0) {
    std::vector<unsigned char> votes(static_cast<size_t>(n), 1);
    auto requests = std::make_unique<Request[]>(static_cast<size_t>(n));
    std::vector<Request*> pending;
    for (int r = 1; r < n; ++r) {
      PLX_CHECK(transport.post_recv(r, tag_base | 3, &votes[r], 1, requests[r]));
      pending.push_back(&requests[r]);
    }
    PLX_CHECK(transport.wait_all(pending.data(), pending.size()));
    for (int r = 1; r < n; ++r) verdict = verdict && votes[r];
    pending.clear();
    for (int r = 1; r < n; ++r) {
      requests[r].reset();
      PLX_CHECK(transport.post_send(r, tag_base | 4, &verdict, 1, requests[r]));
      pending.push_back(&requests[r]);
    }
    PLX_CHECK(transport.wait_all(pending.data(), pending.size()));
  } else {
    Request send, recv;
    PLX_CHECK(transport.post_send(0, tag_base | 3, &verdict, 1, send));
    PLX_CHECK(transport.post_recv(0, tag_base | 4, &verdict, 1, recv));
    Request* both[] = {&send, &recv};
    PLX_CHECK(transport.wait_all(both, 2));
  }
  *all = verdict != 0;
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t open_peer_memory(plx_comm* comm) {
  comm->peers.reset();
  comm->cost_shape.peer_memory = false;
  // No host with two ranks: nothing to share.
  if (comm->size < 2 || comm->hosts.max_local() < 2) return PLX_SUCCESS;
  std::optional<int64_t> enabled;
  PLX_CHECK(config_integer("PLEXUS_SHM", 0, 1, &enabled));
  const bool wanted = enabled.value_or(1) != 0;
  const uint64_t tag_base = comm->next_tag_base();
  if (comm->hosts.host_count() == 1) {
    PLX_CHECK(PeerMemory::open(*comm->transport, tag_base, wanted, comm->chunk_bytes,
                               comm->timeout_ms, comm->async, &comm->peers));
    comm->cost_shape.peer_memory = comm->peers != nullptr;
    if (comm->peers) {
      log_message(LogLevel::Info, "rank {}: peer memory: {} ranks, slots of 2 x {} bytes",
                  comm->rank, comm->size, comm->peers->slot_bytes());
    }
    return PLX_SUCCESS;
  }
  // 1. This host's segment.
  const std::vector<int>& host = comm->hosts.hosts[comm->hosts.host_of[comm->rank]];
  bool ok = wanted;
  if (host.size() > 1) {
    PLX_CHECK(PeerMemory::open(*comm->transport, tag_base, host, wanted, comm->chunk_bytes,
                               comm->timeout_ms, comm->async, &comm->peers));
    ok = comm->peers != nullptr;
  }
  // 2. Every host's, or none.
  bool all = false;
  PLX_CHECK(agree(*comm->transport, tag_base, ok, &all));
  if (!all) {
    if (ok) {
      log_message(LogLevel::Info, "rank {}: no peer memory on any host (another host could not "
                  "map its segment, or PLEXUS_SHM=0 there)", comm->rank);
    }
    comm->peers.reset();
    return PLX_SUCCESS;
  }
  comm->cost_shape.peer_memory = true;
  if (comm->peers) {
    log_message(LogLevel::Info,
                "rank {}: peer memory on its host: {} of {} ranks, slots of 2 x {} bytes",
                comm->rank, comm->peers->size(), comm->size, comm->peers->slot_bytes());
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
