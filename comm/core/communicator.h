// communicator.h - what a plx_comm_t is: a rank's view of one group of ranks.
//
// It owns the transport (its own endpoint), the rendezvous connection that serves as the
// liveness channel (world communicators; split ones use their parent's through AsyncState), the
// rendezvous server when this rank runs it (rank 0 on the env path), the executor that runs its
// calls in order, and the per-call sequence numbers that keep each call's tags apart.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "comm/algorithms/host_layout.h"
#include "comm/base/async_state.h"
#include "comm/bootstrap/rendezvous_client.h"
#include "comm/bootstrap/rendezvous_server.h"
#include "comm/bootstrap/unique_id.h"
#include "comm/core/executor.h"
#include "comm/core/shared_allocations.h"
#include "comm/transport/peer_memory/peer_memory.h"
#include "comm/transport/tag.h"
#include "comm/transport/transport.h"
#include "comm/tuning/algo_override.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/cost_shape.h"
#include "plexus/plexus.h"

namespace plexus::comm::device {
// What a communicator keeps for its collectives on device buffers (comm/device/device_state.h).
// Declared only: comm/device builds on comm/core, never the reverse, so plx_comm holds it through
// a deleter defined where the type is complete (comm/device, in the CUDA build and without it).
struct DeviceState;
struct DeviceStateFree {
  void operator()(DeviceState* state) const;
};
}  // namespace plexus::comm::device

struct plx_comm {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  // The process's own place among the ranks of its host, which PLEXUS_PIN=core pins by: a
  // world communicator's local rank and size, handed down to every communicator split from it
  // (whose own local rank counts only its members). -1: use local_rank / local_size.
  int process_local_rank = -1;
  int process_local_size = -1;
  int timeout_ms = 300000;
  size_t chunk_bytes = size_t{1} << 20;
  bool check_args = true;  // PLEXUS_CHECK_ARGS: compare argument signatures (signature.h)
  std::vector<std::string> host_ids;  // per rank
  // Per rank, the NIC its endpoint opened (Transport::nic(); "" unknown): the cost model's links
  // per host (cost_shape.h nics_in_use). A split's members keep their parent's (their endpoints
  // open the parent's domain).
  std::vector<std::string> nic_ids;
  // Where the ranks run, from host_ids (finish_setup): the hierarchical algorithms' layout
  // (CollArgs::hosts) and the two-level cost model's view of it.
  plexus::comm::HostLayout hosts;
  plexus::comm::CostShape cost_shape;

  std::shared_ptr<plexus::comm::AsyncState> async;
  std::unique_ptr<plexus::bootstrap::RendezvousServer> server;  // when this process runs it
  std::shared_ptr<plexus::bootstrap::RendezvousClient> rendezvous;  // world communicators only
  // The world communicator's rendezvous connection, for a split one too (shared, so a child
  // may outlive its parent's handle): a split communicator's plx_comm_abort reaches its
  // members over it as COMM_ABORT, filed under comm_id. comm_id is 0 for a world
  // communicator; a child's is a hash of its parent's id, the parent's split count and its
  // color, the same on all of its members. world_rank names this process in messages.
  std::shared_ptr<plexus::bootstrap::RendezvousClient> liveness;
  uint64_t comm_id = 0;
  uint64_t split_count = 0;
  int world_rank = 0;
  std::unique_ptr<plexus::comm::Transport> transport;
  // Staging buffers shared with the other ranks of this host (CollArgs::peers): every rank's
  // when all are on this host (the shm algorithms), this host's ranks' when the communicator
  // spans hosts (the hierarchical algorithms' intra-host phases); NULL when this host has one
  // rank or some rank could not map its segment. Made by open_peer_memory.
  std::unique_ptr<plexus::comm::PeerMemory> peers;
  std::unique_ptr<plexus::comm::Executor> executor;
  // Collectives on device buffers (comm/device/device_collective.h): the pinned staging buffer
  // and the CUDA IPC slots, made on the first such call, freed with the communicator.
  std::unique_ptr<plexus::comm::device::DeviceState, plexus::comm::device::DeviceStateFree> device;

  // Algorithm choice: shared cost parameters (rank 0's), and PLEXUS_ALGO / set_algorithm.
  plexus::comm::CostParams cost;
  plexus::comm::AlgoOverrides overrides;
  std::string overrides_spec;
  std::string last_algorithm;  // "allreduce:ring", for plx_comm_last_algorithm
  // The lane step (bytes) and schedule the last hierarchical allreduce ran with
  // (CollArgs::lane_step_bytes and lane_halving, set by run_task.cpp), for tests that check the
  // run takes the cost model's plan.
  size_t last_lane_step_bytes = 0;
  bool last_lane_halving = false;

  // Pre-multiplied sums made by plx_red_op_create_premul_sum: op value -> (datatype, scalar).
  struct PremulOp {
    plx_datatype_t datatype;
    unsigned char scalar[8];
  };
  std::map<int, PremulOp> premul_ops;
  int next_premul_op = PLX_NUM_OPS;

  // plx_comm_register's ranges (plx_mem_alloc memory the peers on this host may map).
  plexus::comm::Registrations registrations;

  // Blocking calls running on a caller's thread (plx_comm_abort waits for them to notice).
  std::atomic<int> active_calls{0};

  // Tag base of the next collective (comm/transport/tag.h): the sequence number in bits 24..43,
  // wrapping after 2^20 calls; bits 0..23 are the algorithm's.
  uint64_t next_tag_base() { return plexus::comm::collective_tag_base(next_seq++); }
  // Tags of the next point-to-point message to / from `peer` (matched in posting order).
  uint64_t next_send_tag(int peer) { return plexus::comm::p2p_tag(send_seq[peer]++); }
  uint64_t next_recv_tag(int peer) { return plexus::comm::p2p_tag(recv_seq[peer]++); }

  std::vector<uint64_t> send_seq;  // per peer, sized at creation
  std::vector<uint64_t> recv_seq;

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
  // A setting this rank found bad before connecting, though it could still connect (its local
  // rank, say): creation connects, then fails with it, so every rank learns it at once.
  std::string deferred_error;
  // The caller's GPU, as comm/device sees it (the C ABI fills these: comm/core cannot ask
  // comm/device): the PCI bus id of the thread's current CUDA device ("" for none), and whether
  // the process sees a GPU. The libfabric transport picks its NIC and reports a refused FI_HMEM
  // by them (comm/transport/ofi/nic_select.h, provider_select.h).
  std::string gpu_pci_bus_id;
  bool gpu_visible = false;
};

// Rendezvous, transport choice, endpoint, address exchange, liveness, cost model. Messages start
// "rank R:"; the C ABI adds the function name. *out is written only on success.
plx_result_t create_communicator(CommSetup setup, plx_comm** out);

// Collective over `parent` (see plx_comm_split). *out is NULL for PLX_UNDEFINED.
plx_result_t split_communicator(plx_comm* parent, int color, int key, plx_comm** out);

// Waits for queued work, then a clean shutdown (GOODBYE through the root for world
// communicators, a barrier for split ones, bounded by the timeout), then frees.
plx_result_t destroy_communicator(plx_comm* comm);

// Counts a blocking call on `comm` while it lives (plx_comm::active_calls), for
// plx_comm_abort(), which waits for such calls to leave before it frees the communicator.
class ActiveCall {
 public:
  explicit ActiveCall(plx_comm* comm) : comm_(comm) { comm_->active_calls.fetch_add(1); }
  ~ActiveCall() { comm_->active_calls.fetch_sub(1); }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  plx_comm* comm_;
};


// Raises the abort flag, lets in-flight calls return PLX_ERROR_ABORTED, tells the root, frees.
void abort_communicator(plx_comm* comm);

// Fields every communicator sets the same way once its transport is connected: the executor,
// the point-to-point counters, PLEXUS_CHECK_ARGS, and the host layout and cost shape built from
// host_ids (which must be set, one per rank).
plx_result_t finish_setup(plx_comm* comm);

// Collective over comm once every rank can receive (communicator_peers.cpp): the peer-memory
// segment of this rank's host (the whole communicator when it runs on one host), with slots of
// chunk_bytes (PLEXUS_SHM=0 or a failure on any rank: none, on every rank), and
// cost_shape.peer_memory true when every host with several ranks has one.
plx_result_t open_peer_memory(plx_comm* comm);

}  // namespace plexus::comm
