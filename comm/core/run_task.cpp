// run_task.cpp - see run_task.h.
#include "comm/core/run_task.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/algorithms/deliberate_leak.h"
#include "comm/algorithms/hierarchical_segments.h"
#include "comm/algorithms/shm_registered.h"
#include "comm/core/algorithm_choice.h"
#include "comm/core/communicator.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/signature.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_model.h"
#include "comm/reduce/reduce.h"


namespace plexus::comm {
namespace {

const char* datatype_label(int datatype) {
  static const char* const kNames[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                       "uint64", "float16", "bfloat16", "float32", "float64"};
  return datatype >= 0 && datatype < PLX_NUM_DATATYPES ? kNames[datatype] : "?";
}

const char* op_label(int op) {
  static const char* const kNames[] = {"sum", "prod", "min", "max", "avg"};
  return op >= 0 && op < PLX_NUM_OPS ? kNames[op] : "?";
}

bool has_op(Collective c) {
  return c == Collective::Allreduce || c == Collective::Reduce || c == Collective::ReduceScatter;
}
bool has_root(Collective c) {
  return c == Collective::Reduce || c == Collective::Broadcast || c == Collective::Gather ||
         c == Collective::Scatter;
}

// "allreduce(count 100, float32, sum, algorithm ring)". What a collective does not compare is
// left out: a barrier's count and datatype, an alltoallv's counts.
std::string describe(const Signature& s) {
  const auto collective = static_cast<Collective>(s.collective);
  if (s.flags & kSignatureRefused) {
    return fmt::format("{} with arguments it refused (its own call failed with "
                       "PLX_ERROR_INVALID_ARGUMENT; its error names the argument)",
                       collective_name(collective));
  }
  std::string text = fmt::format("{}(", collective_name(collective));
  if (collective == Collective::Alltoallv) {
    text += fmt::format("{}, ", datatype_label(s.datatype));
  } else if (collective != Collective::Barrier) {
    text += fmt::format("count {}, {}, ", s.count, datatype_label(s.datatype));
  }
  if (has_op(collective)) {
    if (s.flags & kSignaturePremul) {
      text += fmt::format("premul_sum scalar bits {:#x}, ", s.premul_scalar);
    } else {
      text += fmt::format("{}, ", op_label(s.op));
    }
  }
  if (has_root(collective)) text += fmt::format("root {}, ", s.root);
  const auto id = static_cast<AlgorithmId>(s.algorithm);
  return text + fmt::format("algorithm {})",
                            id < AlgorithmId::kCount ? algorithm_name(id) : "?");
}

Signature signature_of(const CollectiveOp& op, uint8_t algorithm) {
  Signature s;
  const CollArgs& a = op.args;
  s.collective = static_cast<uint8_t>(a.collective);
  s.datatype = static_cast<uint8_t>(a.datatype);
  s.op = has_op(a.collective) ? static_cast<uint8_t>(a.op) : 0;
  s.root = has_root(a.collective) ? a.root : 0;
  s.count = a.collective == Collective::Barrier || a.collective == Collective::Alltoallv
                ? 0
                : a.count;
  s.algorithm = algorithm;
  if (op.premul) {
    s.flags = kSignaturePremul;
    std::memcpy(&s.premul_scalar, op.premul_scalar, datatype_bytes(a.datatype));
  }
  return s;
}

// The bytes of sendbuf and recvbuf that a registered shm path (shm_registered.h) reads or
// writes from the peers' processes, for the collectives that have one; false for the others.
bool registered_extent(const CollArgs& a, int n, size_t* send_bytes, size_t* recv_bytes) {
  const size_t block = a.count * datatype_bytes(a.datatype);
  const size_t all = block * static_cast<size_t>(n);
  switch (a.collective) {
    case Collective::Allreduce:
    case Collective::Broadcast: *send_bytes = *recv_bytes = block; return true;
    case Collective::Allgather: *send_bytes = block; *recv_bytes = all; return true;
    case Collective::ReduceScatter: *send_bytes = all; *recv_bytes = block; return true;
    case Collective::Alltoall: *send_bytes = *recv_bytes = all; return true;
    default: return false;
  }
}

// Sets a.send_ref and a.recv_ref, the call's buffers as registered plx_mem_alloc memory
// (shared_buffer.h; alloc_id 0: not), for a registered shm path (shm_registered.h), and returns
// whether this rank's buffers that the path needs are registered (the Signature's
// `registered`). Done before the argument check, so sendbuf is taken as a pre-multiplied sum
// will leave it: recvbuf for allreduce (it scales into recvbuf first), scratch memory for the
// others (never registered). The path needs sendbuf and recvbuf for allreduce, the root's
// sendbuf for broadcast (any other rank needs none), sendbuf for allgather, reduce-scatter and
// all-to-all (one not overlapping recvbuf: an in-place all-to-all would overwrite what its peers
// read). Nothing below kRegisteredMinBytes, where no registered path runs.
bool find_registered(const plx_comm* comm, const CollectiveOp& op, CollArgs& a) {
  a.send_ref = a.recv_ref = SharedBufferRef{};
  size_t send_bytes = 0, recv_bytes = 0;
  if (!a.peers || !registered_extent(a, comm->size, &send_bytes, &recv_bytes) ||
      std::max(send_bytes, recv_bytes) < kRegisteredMinBytes) {
    return false;
  }
  if (comm->registrations.size() > 0) {
    const void* sendbuf = a.sendbuf;
    if (op.premul) sendbuf = a.collective == Collective::Allreduce ? a.recvbuf : nullptr;
    const auto* s = static_cast<const unsigned char*>(sendbuf);
    const auto* v = static_cast<const unsigned char*>(a.recvbuf);
    const bool overlap = a.collective == Collective::Alltoall && s != nullptr &&
                         s < v + recv_bytes && v < s + send_bytes;
    if (sendbuf != nullptr && !overlap) {
      a.send_ref = comm->registrations.buffer_ref(sendbuf, send_bytes);
    }
    a.recv_ref = comm->registrations.buffer_ref(a.recvbuf, recv_bytes);
  }
  const bool send = a.send_ref.alloc_id != 0, recv = a.recv_ref.alloc_id != 0;
  switch (a.collective) {
    case Collective::Allreduce: return send && recv;
    case Collective::Broadcast: return comm->rank != a.root || send;
    default: return send;
  }
}

// plx_comm_last_algorithm's name for a shm call that ran on registered buffers
// ("<collective>:shm_registered").
const std::string& registered_name(Collective c) {
  static const std::string names[] = {
      "allreduce:shm_registered", "broadcast:shm_registered", "allgather:shm_registered",
      "reduce_scatter:shm_registered", "alltoall:shm_registered", ""};
  switch (c) {
    case Collective::Allreduce: return names[0];
    case Collective::Broadcast: return names[1];
    case Collective::Allgather: return names[2];
    case Collective::ReduceScatter: return names[3];
    case Collective::Alltoall: return names[4];
    default: return names[5];
  }
}

bool moves_data(const CollArgs& a) {
  return a.collective == Collective::Barrier || a.collective == Collective::Alltoallv ||
         a.count > 0;
}

// Whether the argument check goes to the algorithm (CollArgs::check) to ride the call's own
// first wait (NoteCheck, algorithms.h) instead of a step of its own: the one-host shm
// algorithms that take it (the one-shot allreduce of one piece; broadcast, allgather,
// reduce-scatter and all-to-all under kRegisteredMinBytes, where they run one piece as a rule
// and otherwise check apart first, shm_pieces.h's ride_or_check), through a segment of every
// rank, with nothing written before them (a pre-multiplied sum scales first). Larger calls keep
// the check here, which also tells the registered paths whether every rank is registered.
bool check_can_ride(const plx_comm* comm, const CollectiveOp& op, AlgorithmId chosen) {
  static_assert(sizeof(Signature) <= PeerMemory::kNoteBytes, "a signature fits a note");
  const CollArgs& a = op.args;
  const PeerMemory* peers = comm->peers.get();
  if (peers == nullptr || peers->size() != comm->size || comm->size > kNoteCheckRanks ||
      op.premul || a.count == 0) {
    return false;
  }
  const size_t bytes = a.count * datatype_bytes(a.datatype);
  switch (chosen) {
    case AlgorithmId::AllreduceShmOneshot:
      return bytes <= std::min(peers->slot_bytes(), kShmPieceBytes);
    case AlgorithmId::BroadcastShm:
    case AlgorithmId::AllgatherShm:
    case AlgorithmId::ReduceScatterShm:
    case AlgorithmId::AlltoallShm: {
      size_t send_bytes = 0, recv_bytes = 0;
      return registered_extent(a, comm->size, &send_bytes, &recv_bytes) &&
             std::max(send_bytes, recv_bytes) < kRegisteredMinBytes;
    }
    default: return false;
  }
}

struct CheckContext {
  int rank;
};

plx_result_t judge_notes(const void* notes, int count, void* context) {
  const auto* c = static_cast<const CheckContext*>(context);
  return judge_signatures(static_cast<const Signature*>(notes), count, c->rank, describe);
}

// Pre-multiplied sum: scale this rank's input, then sum. The scaled copy goes into recvbuf when
// the collective can then run in place there, else into `scratch`.
plx_result_t apply_premul(plx_comm* comm, CollectiveOp& op,
                          std::unique_ptr<unsigned char[]>* scratch) {
  CollArgs& a = op.args;
  const size_t elem = datatype_bytes(a.datatype);
  const bool root = comm->rank == a.root;
  if (a.collective == Collective::Allreduce || (a.collective == Collective::Reduce && root)) {
    scale_by(a.recvbuf, a.sendbuf, a.count, a.datatype, op.premul_scalar);
    a.sendbuf = a.recvbuf;
    return PLX_SUCCESS;
  }
  const size_t count = a.collective == Collective::ReduceScatter
                           ? a.count * static_cast<size_t>(comm->size)
                           : a.count;
  *scratch = std::make_unique_for_overwrite<unsigned char[]>(count * elem);
  scale_by(scratch->get(), a.sendbuf, count, a.datatype, op.premul_scalar);
  a.sendbuf = scratch->get();
  return PLX_SUCCESS;
}

plx_result_t run_collective(plx_comm* comm, CollectiveOp& op) {
  CollArgs& a = op.args;
  if (op.refused) {
    Signature refused;
    refused.collective = static_cast<uint8_t>(a.collective);
    refused.flags = kSignatureRefused;
    PLX_CHECK(compare_signatures(*comm->transport, op.tag_base, refused, describe,
                                 comm->peers.get()));
    // Every rank refused it: the call failed on each already; a group holding it fails too.
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("rank {}: every rank refused the arguments of its {} in this "
                                 "group (each call failed with PLX_ERROR_INVALID_ARGUMENT)",
                                 comm->rank, collective_name(a.collective)));
  }
  a.chunk_bytes = comm->chunk_bytes;
  a.network_chunk_bytes = flat_slice_bytes(comm->cost_shape, comm->cost, comm->chunk_bytes);
  a.hosts = &comm->hosts;  // the hierarchical algorithms' layout
  a.peers = comm->peers.get();  // the shm algorithms' staging buffers (NULL: none)
  ChosenAlgorithm chosen;
  PLX_CHECK(choose_algorithm(comm, a, &chosen));
  if (chosen.id == AlgorithmId::AllreduceHierarchical) {
    const HierarchicalLanePlan plan = hierarchical_lane_plan(
        a.count * datatype_bytes(a.datatype), comm->cost_shape, comm->cost, comm->chunk_bytes);
    a.lane_halving = plan.halving;
    a.lane_step_bytes = plan.step_bytes;
    comm->last_lane_step_bytes = plan.step_bytes;
    comm->last_lane_halving = plan.halving;
    a.intra_chunk_bytes = hierarchical_intra_slice_bytes(comm->chunk_bytes, comm->cost.alpha_s,
                                                         comm->cost.beta_s_per_byte);
  }
  if (!is_hierarchical(chosen.id)) {
    // A flat algorithm (or a shm one's flat fallback) across hosts slices at the network's
    // step, as the cost model priced it (cost_model.h flat_slice_bytes).
    a.chunk_bytes = a.network_chunk_bytes;
  }
  comm->last_algorithm = qualified_algorithm_name(chosen.id);
  Signature signature = signature_of(op, static_cast<uint8_t>(chosen.id));
  signature.registered = find_registered(comm, op, a) ? 1 : 0;
  CheckContext context{comm->rank};
  const NoteCheck riding{&signature, sizeof(signature), judge_notes, &context};
  bool rides = false;
  a.registered = EveryoneRegistered::Unknown;
  if (comm->check_args && comm->size > 1) {
    rides = check_can_ride(comm, op, chosen.id);
    if (!rides) {
      bool everyone = false;
      PLX_CHECK(compare_signatures(*comm->transport, op.tag_base, signature, describe,
                                   comm->peers.get(), &everyone));
      a.registered = everyone ? EveryoneRegistered::Yes : EveryoneRegistered::No;
    }
  }
  if (!moves_data(a)) return PLX_SUCCESS;
  std::unique_ptr<unsigned char[]> scratch;
  if (op.premul) PLX_CHECK(apply_premul(comm, op, &scratch));
  if (a.peers) a.peers->last_path = PeerMemory::Path::Staged;
  a.check = rides ? &riding : nullptr;
  const plx_result_t ran = chosen.fn(*comm->transport, op.tag_base, a);
  a.check = nullptr;  // it points into this frame
  PLX_CHECK(ran);
  if (a.peers && a.peers->last_path == PeerMemory::Path::Registered) {
    comm->last_algorithm = registered_name(a.collective);
  }
  return PLX_SUCCESS;
}

// The posted requests of a parked send or receive, and when they last made progress.
struct ParkedRequests {
  std::unique_ptr<Request[]> requests;
  size_t count = 0;
  size_t completed = 0;
  std::chrono::steady_clock::time_point last_progress = std::chrono::steady_clock::now();
};

// Task::poll of a parked task: one progress pass of the transport (which also advances whatever
// else is posted), then a look at the task's own requests, with the transport's wait_all rules:
// a request's error, a lost peer or an abort at once, PLEXUS_TIMEOUT_MS without progress.
std::function<plx_result_t(bool*)> parked_poll(plx_comm* comm,
                                               std::shared_ptr<ParkedRequests> parked) {
  return [comm, parked](bool* done) {
    *done = false;
    bool first_done = false;
    plx_result_t result = comm->transport->test(parked->requests[0], &first_done);
    size_t completed = 0;
    const Request* waiting = nullptr;  // the first request still in flight
    for (size_t i = 0; result == PLX_SUCCESS && i < parked->count; ++i) {
      const Request& r = parked->requests[i];
      if (!r.done) {
        if (waiting == nullptr) waiting = &r;
        continue;
      }
      if (r.result != PLX_SUCCESS) {
        result = set_error(r.result, fmt::format("rank {}: a send or receive with rank {} ({} "
                                                 "bytes) failed",
                                                 comm->rank, r.peer, r.bytes));
      }
      ++completed;
    }
    if (result == PLX_SUCCESS && waiting == nullptr) {
      *done = true;
      return PLX_SUCCESS;
    }
    const auto now = std::chrono::steady_clock::now();
    if (result == PLX_SUCCESS && completed > parked->completed) {
      parked->completed = completed;
      parked->last_progress = now;
    } else if (result == PLX_SUCCESS &&
               now - parked->last_progress > std::chrono::milliseconds(comm->timeout_ms)) {
      result = set_error(PLX_ERROR_TIMEOUT,
                         fmt::format("rank {}: waiting for a send or receive with rank {} ({} "
                                     "bytes): no progress for PLEXUS_TIMEOUT_MS={} ms",
                                     comm->rank, waiting->peer, waiting->bytes, comm->timeout_ms));
    }
    // The transport may still write into requests it failed to complete: leak them.
    if (result != PLX_SUCCESS) leak_on_purpose(parked->requests);
    return result;
  };
}

}  // namespace

void run_task(plx_comm* comm, Task& task) {
  clear_error();
  plx_result_t result = PLX_SUCCESS;
  if (task.body) {
    result = task.body();
  } else {
    // Sends and receives are all posted first, so a group's ring exchange cannot deadlock.
    auto requests = std::make_unique<Request[]>(task.p2p.size());
    size_t posted = 0;
    for (const P2POp& p : task.p2p) {
      Request& req = requests[posted];
      result = p.is_send ? comm->transport->post_send(p.peer, p.tag, p.buf, p.bytes, req)
                         : comm->transport->post_recv(p.peer, p.tag, p.buf, p.bytes, req);
      if (result != PLX_SUCCESS) break;
      ++posted;
    }
    bool agreed_failure = false;  // see below
    // While the group's sends and receives are in flight, a wait through peer memory keeps
    // polling the transport: libfabric's shm provider moves a message only while its receiver
    // polls, and that receiver may be waiting in a peer-memory collective of the same group.
    const IdleWork poll = [comm]() -> plx_result_t {
      comm->transport->poll_once();
      return PLX_SUCCESS;
    };
    PeerMemory* const peers = comm->peers.get();
    const bool poll_in_waits = peers != nullptr && posted > 0 && !task.collectives.empty();
    if (poll_in_waits) peers->set_background_work(&poll);
    for (size_t i = 0; result == PLX_SUCCESS && i < task.collectives.size(); ++i) {
      result = run_collective(comm, task.collectives[i]);
      agreed_failure = result == PLX_ERROR_MISMATCH ||
                       (task.collectives[i].refused && result == PLX_ERROR_INVALID_ARGUMENT);
    }
    if (poll_in_waits) peers->set_background_work(nullptr);
    if (result == PLX_SUCCESS && posted > 0 && task.may_park) {
      // Posted: the executor drives it from now on (task.h), and goes on with later tasks.
      auto parked = std::make_shared<ParkedRequests>();
      parked->requests = std::move(requests);
      parked->count = posted;
      task.poll = parked_poll(comm, std::move(parked));
      return;
    }
    // The posted sends and receives are finished here, and also after a failure every rank
    // agrees on (a signature mismatch, or a call every rank refused): it stops every rank at the
    // same collective of the group before that moves any data, and the peers' matching sends and
    // receives were posted with their groups and are finished by them too; so nothing writes
    // into the caller's buffers after the call returns.
    if (posted > 0 && (result == PLX_SUCCESS || agreed_failure)) {
      const plx_result_t failure = result;
      const std::string why = failure == PLX_SUCCESS ? std::string() : std::string(last_error());
      std::vector<Request*> pointers;
      for (size_t i = 0; i < posted; ++i) pointers.push_back(&requests[i]);
      const plx_result_t waited = comm->transport->wait_all(pointers.data(), pointers.size());
      if (waited == PLX_SUCCESS) posted = 0;  // nothing left in flight
      result = failure == PLX_SUCCESS ? waited : set_error(failure, why);
    }
    if (result != PLX_SUCCESS && posted > 0) {
      // The transport may still write into posted requests (see pipeline.h): leak them.
      leak_on_purpose(requests);
    }
  }
  std::string message = result == PLX_SUCCESS ? std::string() : std::string(last_error());
  if (result != PLX_SUCCESS && message.empty()) {
    message = fmt::format("rank {}: failed with {}", comm->rank, plx_get_error_string(result));
  }
  task.finish(result, std::move(message));
}

}  // namespace plexus::comm
