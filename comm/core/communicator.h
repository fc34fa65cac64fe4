// communicator.h - what a plx_comm_t is: a rank's view of one group of ranks.
//
// It owns the transport (its own libfabric endpoint), the rendezvous connection that serves as
// the liveness channel, the rendezvous server when this rank runs it (rank 0 on the env path),
// and the per-call sequence number that keeps each collective's tags apart.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "comm/bootstrap/rendezvous_client.h"
#include "comm/bootstrap/rendezvous_server.h"
#include "comm/bootstrap/unique_id.h"
#include "comm/core/async_state.h"
#include "comm/transport/ofi/ofi_transport.h"
#include "comm/transport/tag.h"
#include "plexus/plexus.h"

struct plx_comm {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int timeout_ms = 300000;
  size_t chunk_bytes = size_t{1} << 20;

  std::shared_ptr<plexus::comm::AsyncState> async;
  std::unique_ptr<plexus::bootstrap::RendezvousServer> server;  // when this process runs it
  std::unique_ptr<plexus::bootstrap::RendezvousClient> rendezvous;
  std::unique_ptr<plexus::comm::ofi::OfiTransport> transport;

  // Collectives in progress (plx_comm_abort waits for them to notice the abort flag).
  std::atomic<int> active_calls{0};

  // Tag base of the next collective (comm/transport/tag.h): the sequence number in bits 24..43,
  // wrapping after 2^20 calls; bits 0..23 are the algorithm's.
  uint64_t next_tag_base() { return plexus::comm::collective_tag_base(next_seq++); }

 private:
  uint64_t next_seq = 0;
};

namespace plexus::comm {

struct CommSetup {
  bootstrap::RendezvousAddress address;  // port 0: no rendezvous (a world of one rank)
  int rank = 0;
  int nranks = 1;
  int local_rank = -1;  // -1: computed from host ids
  int local_size = -1;
  std::unique_ptr<bootstrap::RendezvousServer> server;  // handed to the communicator
};

// Rendezvous, provider choice, endpoint, address exchange, liveness. Messages start "rank R:";
// the C ABI adds the function name. *out is written only on success.
plx_result_t create_communicator(CommSetup setup, plx_comm** out);

// Clean shutdown (GOODBYE through the root, bounded by the timeout), then frees.
plx_result_t destroy_communicator(plx_comm* comm);

// Raises the abort flag, lets in-flight calls return PLX_ERROR_ABORTED, tells the root, frees.
void abort_communicator(plx_comm* comm);

}  // namespace plexus::comm
