// ipc_collective.cpp - allreduce, reduce, broadcast, reduce_scatter and allgather on device
// buffers between the ranks of one host, through their device slots mapped with CUDA IPC: the
// shm algorithms of comm/algorithms/shm_*.cpp with GPU memory, read and written with copies and
// n-ary reduction kernels as NCCL's P2P transport does over NVLink/PCIe.
//
// The steps of every piece are those of ipc_schedule.h (which the CPU test checks); this file
// chooses the path, compares the argument signature, opens the slots on first use
// (ipc_slots.cpp) and runs the steps: copies with cudaMemcpyAsync (device to device; a peer's
// slot is its cudaIpcOpenMemHandle mapping), reductions with device::reduce_sources over the n
// slots (divide_by for PLX_AVG, scale_by for the input of a pre-multiplied sum), everything on
// the caller's stream, and the waits and counters of the communicator's peer memory
// (comm/transport/peer_memory/peer_memory.h; its host slots are not used).
//
// Each reduced element is reduced by one rank in the host algorithm's order, so every rank
// receives the same bits, equal to the host shm result. Device traffic per rank, m = the bytes
// of the vector (of one block for reduce_scatter, allgather):
//   allreduce  m in, (n-1)/n m reduced from peers, m out    reduce     the same, m out on the root
//   broadcast  m in on the root, m out on the others        allgather  m in, (n-1) m out
//   reduce_scatter  n m in, (n-1) m reduced from peers
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/core/signature.h"
#include "comm/core/submit.h"
#include "comm/device/device_paths.h"
#include "comm/device/device_reduce.h"
#include "comm/device/ipc_schedule.h"
#include "comm/transport/peer_memory/peer_memory.h"
#include "comm/tuning/algorithm_id.h"

namespace plexus::comm::device {

namespace {

constexpr uint32_t kFlagPremul = 1;  // as run_task.cpp's signatures
constexpr uint32_t kFlagDeviceIpc = 2;

bool reduces(Collective c) {
  return c == Collective::Allreduce || c == Collective::Reduce || c == Collective::ReduceScatter;
}
bool rooted(Collective c) { return c == Collective::Reduce || c == Collective::Broadcast; }

// The name of the path (plx_comm_last_algorithm, the peer-memory wait messages).
const char* path_name(Collective c) {
  switch (c) {
    case Collective::Allreduce: return "allreduce:cuda_ipc";
    case Collective::Reduce: return "reduce:cuda_ipc";
    case Collective::Broadcast: return "broadcast:cuda_ipc";
    case Collective::ReduceScatter: return "reduce_scatter:cuda_ipc";
    case Collective::Allgather: return "allgather:cuda_ipc";
    default: return "?:cuda_ipc";
  }
}

// The host shm algorithm the path mirrors, for the signature.
AlgorithmId shm_algorithm(Collective c) {
  switch (c) {
    case Collective::Reduce: return AlgorithmId::ReduceShm;
    case Collective::Broadcast: return AlgorithmId::BroadcastShm;
    case Collective::ReduceScatter: return AlgorithmId::ReduceScatterShm;
    case Collective::Allgather: return AlgorithmId::AllgatherShm;
    default: return AlgorithmId::AllreduceShm;
  }
}

// Slots of 4 chunks: a piece costs two stream synchronisations and two waits, so pieces larger
// than the host algorithms' keep that overhead small; the same on every rank (chunk_bytes is
// compared at creation).
size_t ipc_slot_bytes(const plx_comm* comm) {
  const size_t bytes = std::min<size_t>(comm->chunk_bytes * 4, size_t{64} << 20);
  return (std::max<size_t>(bytes, 4096) + 4095) / 4096 * 4096;
}

std::string describe(const Signature& s) {
  const bool device = (s.flags & kFlagDeviceIpc) != 0;
  const auto c = static_cast<Collective>(s.collective);
  const auto id = static_cast<AlgorithmId>(s.algorithm);
  return fmt::format("{}(count {}, datatype {}, op {}{}, {}{} buffers, algorithm {})",
                     collective_name(c), s.count, static_cast<int>(s.datatype),
                     static_cast<int>(s.op), (s.flags & kFlagPremul) ? " premul_sum" : "",
                     rooted(c) ? fmt::format("root {}, ", s.root) : std::string(),
                     device ? "device" : "host",
                     device ? "cuda_ipc"
                            : (id < AlgorithmId::kCount ? std::string(algorithm_name(id))
                                                        : std::string("?")));
}

// The op to reduce with and, for a pre-multiplied sum, its scalar (nullptr otherwise).
bool resolve_op(const plx_comm* comm, plx_red_op_t op, plx_datatype_t datatype,
                plx_red_op_t* reduce_op, const unsigned char** scalar) {
  *scalar = nullptr;
  if (static_cast<int>(op) >= 0 && static_cast<int>(op) < PLX_NUM_OPS) {
    *reduce_op = op;
    return true;
  }
  const auto it = comm->premul_ops.find(static_cast<int>(op));
  if (it == comm->premul_ops.end() || it->second.datatype != datatype) return false;
  *reduce_op = PLX_SUM;
  *scalar = it->second.scalar;
  return true;
}

// [a, a + a_bytes) and [b, b + b_bytes) do not overlap.
bool disjoint(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x + a_bytes <= y || y + b_bytes <= x;
}

// The in-place layout of the call on this rank (recvbuf inside sendbuf for reduce_scatter,
// sendbuf inside recvbuf for allgather, the same pointer otherwise).
bool in_place(const plx_comm* comm, const DeviceArgs& a) {
  const size_t block_bytes = a.count * plx_datatype_size(a.datatype);
  const auto send = static_cast<const unsigned char*>(a.send);
  const auto recv = static_cast<const unsigned char*>(a.recv);
  const size_t r = static_cast<size_t>(comm->rank);
  if (a.collective == Collective::ReduceScatter) return recv == send + r * block_bytes;
  if (a.collective == Collective::Allgather) return send == recv + r * block_bytes;
  return send == recv;
}

#define PLX_CUDA(expr, what) PLX_CHECK(cuda_result((expr), fn, comm->rank, (what)))

struct Run {
  const char* fn;
  plx_comm* comm;
  DeviceState* state;
  cudaStream_t stream;
  const DeviceArgs* args;
  plx_red_op_t op;
  const unsigned char* scalar;
};

unsigned char* place(const Run& run, const Place& p, uint32_t g) {
  const size_t bytes = p.offset * plx_datatype_size(run.args->datatype);
  switch (p.buffer) {
    case Buffer::Send: return const_cast<unsigned char*>(
        static_cast<const unsigned char*>(run.args->send)) + bytes;
    case Buffer::Recv: return static_cast<unsigned char*>(run.args->recv) + bytes;
    default: return run.state->slot(p.rank, g) + bytes;
  }
}

plx_result_t run_step(const Run& run, const Step& s, uint32_t g) {
  const char* fn = run.fn;
  plx_comm* comm = run.comm;
  PeerMemory& peers = *comm->peers;
  const char* name = path_name(run.args->collective);
  const plx_datatype_t datatype = run.args->datatype;
  switch (s.kind) {
    case StepKind::WaitWritable: return peers.wait_writable(g, name);
    case StepKind::WaitAllArrived: return peers.wait_all_arrived(g, name);
    case StepKind::WaitArrived: return peers.wait_arrived(s.peer, g, name);
    case StepKind::WaitReduced: return peers.wait_reduced(s.peer, g, name);
    case StepKind::Arrive: peers.arrive(g); return PLX_SUCCESS;
    case StepKind::Reduced: peers.reduced(g); return PLX_SUCCESS;
    case StepKind::Sync:
      PLX_CUDA(cudaStreamSynchronize(run.stream), fmt::format("{}: waiting for piece {}", name, g));
      return PLX_SUCCESS;
    case StepKind::Copy: {
      unsigned char* dst = place(run, s.dst, g);
      const unsigned char* src = place(run, s.src, g);
      if (s.scaled && run.scalar != nullptr) {
        return scale_by(dst, src, s.count, datatype, run.scalar, run.stream);
      }
      PLX_CUDA(cudaMemcpyAsync(dst, src, s.count * plx_datatype_size(datatype),
                               cudaMemcpyDeviceToDevice, run.stream),
               fmt::format("{}: piece {}: copying {} elements", name, g, s.count));
      return PLX_SUCCESS;
    }
    case StepKind::Reduce: {
      const int n = comm->size, r = comm->rank;
      const size_t offset_bytes = s.src.offset * plx_datatype_size(datatype);
      const void* sources[kMaxReduceSources];
      for (int j = 0; j < n; ++j) sources[j] = run.state->slot((r + j) % n, g) + offset_bytes;
      unsigned char* dst = place(run, s.dst, g);
      PLX_CHECK(reduce_sources(dst, sources, n, s.count, datatype, run.op, run.stream));
      if (run.op == PLX_AVG) {
        PLX_CHECK(divide_by(dst, s.count, datatype, static_cast<size_t>(n), run.stream));
      }
      return PLX_SUCCESS;
    }
  }
  return PLX_SUCCESS;
}

// Every piece's steps (ipc_schedule.h), numbered by the peer memory, then a last Sync.
plx_result_t run_pieces(const Run& run, const IpcCall& call) {
  const char* fn = run.fn;
  plx_comm* comm = run.comm;
  PeerMemory& peers = *comm->peers;
  PLX_CHECK(peers.usable(path_name(call.collective)));
  const IpcPieces layout = ipc_pieces(call);
  if (layout.per_piece == 0) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("{}: rank {}: CUDA IPC slots of {} elements hold no piece of "
                                 "{} ranks",
                                 fn, comm->rank, call.slot_elems, call.n));
  }
  const uint32_t first = peers.next_pieces(static_cast<uint32_t>(layout.pieces));
  std::vector<Step> steps;
  for (size_t k = 0; k < layout.pieces; ++k) {
    const uint32_t g = first + static_cast<uint32_t>(k);
    steps.clear();
    ipc_piece_steps(call, k, &steps);
    for (const Step& s : steps) PLX_CHECK(run_step(run, s, g));
  }
  PLX_CUDA(cudaStreamSynchronize(run.stream), "waiting for the last piece");
  return PLX_SUCCESS;
}

}  // namespace

bool ipc_eligible(plx_comm* comm, const DeviceArgs& args) {
  const Collective c = args.collective;
  if (!has_ipc_schedule(c) || args.count == 0) return false;
  if (!comm->peers || comm->size < 2 || comm->size > kMaxReduceSources) return false;
  // Peer memory of the whole communicator (not of one host of several), ranks numbered alike.
  if (comm->peers->size() != comm->size || comm->peers->rank() != comm->rank) return false;
  if (comm->device && comm->device->ipc == IpcState::Off) return false;
  // Calls the host checks would refuse take the staged path, which reports them.
  const int datatype = static_cast<int>(args.datatype);
  if (datatype < 0 || datatype >= PLX_NUM_DATATYPES) return false;
  if (reduces(c)) {
    plx_red_op_t op = PLX_SUM;
    const unsigned char* scalar = nullptr;
    if (!resolve_op(comm, args.op, args.datatype, &op, &scalar)) return false;
  }
  if (rooted(c) && (args.root < 0 || args.root >= comm->size)) return false;
  const size_t elem = plx_datatype_size(args.datatype);
  const size_t n = static_cast<size_t>(comm->size);
  if (args.count > SIZE_MAX / elem / n) return false;
  const size_t bytes = args.count * elem;
  const bool root = comm->rank == args.root;
  switch (c) {
    case Collective::Reduce:
      if (args.send == nullptr) return false;
      if (!root) return true;  // recvbuf is the root's only
      break;
    case Collective::Broadcast:
      if (args.recv == nullptr) return false;
      if (!root) return true;  // sendbuf is the root's only
      break;
    case Collective::ReduceScatter:
      if (args.send == nullptr || args.recv == nullptr) return false;
      return in_place(comm, args) || disjoint(args.send, n * bytes, args.recv, bytes);
    case Collective::Allgather:
      if (args.send == nullptr || args.recv == nullptr) return false;
      return in_place(comm, args) || disjoint(args.send, bytes, args.recv, n * bytes);
    default:
      break;
  }
  if (args.send == nullptr || args.recv == nullptr) return false;
  return args.send == args.recv || disjoint(args.send, bytes, args.recv, bytes);
}

plx_result_t run_ipc_collective(const char* fn, plx_comm* comm, cudaStream_t stream, int device,
                                const DeviceArgs& args, bool* fell_back) {
  *fell_back = false;
  const Collective c = args.collective;
  plx_red_op_t op = PLX_SUM;
  const unsigned char* scalar = nullptr;
  if (reduces(c)) resolve_op(comm, args.op, args.datatype, &op, &scalar);  // eligibility checked
  DeviceState& state = device_state(comm);
  if (state.ipc == IpcState::Ready && state.ipc_device != device) {
    return set_error(PLX_ERROR_INVALID_USAGE,
                     fmt::format("{}: rank {}: the buffers are on device {} but this "
                                 "communicator's CUDA IPC slots are on device {}; use one device "
                                 "per communicator",
                                 fn, comm->rank, device, state.ipc_device));
  }
  const uint64_t tag_base = comm->next_tag_base();  // in call order, on the caller's thread
  Signature mine;
  mine.collective = static_cast<uint8_t>(c);
  mine.datatype = static_cast<uint8_t>(args.datatype);
  mine.op = reduces(c) ? static_cast<uint8_t>(op) : 0;
  mine.root = rooted(c) ? args.root : 0;
  mine.count = args.count;
  mine.algorithm = static_cast<uint8_t>(shm_algorithm(c));
  mine.flags = kFlagDeviceIpc;
  if (scalar != nullptr) {
    mine.flags |= kFlagPremul;
    std::memcpy(&mine.premul_scalar, scalar, plx_datatype_size(args.datatype));
  }
  IpcCall call;
  call.collective = c;
  call.n = comm->size;
  call.rank = comm->rank;
  call.root = rooted(c) ? args.root : 0;
  call.count = args.count;
  call.elem = plx_datatype_size(args.datatype);
  call.in_place = in_place(comm, args);
  comm->last_algorithm = path_name(c);
  return submit_body(comm, [&]() -> plx_result_t {
    PLX_CUDA(cudaSetDevice(device), "cudaSetDevice on the thread running the call");
    if (comm->check_args) {
      PLX_CHECK(compare_signatures(*comm->transport, tag_base, mine, describe, comm->peers.get()));
    }
    if (state.ipc == IpcState::Unset) {
      state.slot_bytes = ipc_slot_bytes(comm);
      PLX_CHECK(open_ipc_slots(comm, tag_base, &state));
    }
    if (state.ipc != IpcState::Ready) {
      *fell_back = true;
      return PLX_SUCCESS;
    }
    call.slot_elems = state.slot_bytes / call.elem;
    const Run run{fn, comm, &state, stream, &args, op, scalar};
    return run_pieces(run, call);
  });
}

}  // namespace plexus::comm::device
