// ipc_allreduce.cpp - allreduce on device buffers between the ranks of one host, through their
// device slots mapped with CUDA IPC: shm_allreduce.cpp with GPU memory (the split of Patarasuk &
// Yuan, JPDC 2009, done with loads and stores as NCCL's P2P transport does over NVLink/PCIe).
//
// Every rank holds two device slots of slot_bytes (ipc_slots.cpp) and maps its peers'. The
// vector goes through in pieces of slot_bytes, numbered by the communicator's peer memory
// (comm/transport/peer_memory/peer_memory.h: its per-rank `arrived` / `reduced` counters and
// their bounded futex waits order the ranks; its host slots are not used). Per piece g, on rank r
// of n, everything on the caller's stream:
//
//   1. stage    wait until every peer has arrived at g - 1 (done reading this buffer); copy the
//               piece of sendbuf into r's slot g % 2 (scaled for a pre-multiplied sum);
//               synchronize; publish arrived = g + 1
//   2. reduce   once every rank has arrived: part r of the piece (piece_part) over every rank's
//               slot, in the order r, r+1, .., r-1, by one n-ary kernel (device::reduce_sources)
//               into r's own slot, divided by n for PLX_AVG; synchronize; publish reduced = g + 1
//   3. gather   once rank q has reduced: copy part q of q's slot into recvbuf, for every q
//               (cudaMemcpyAsync; the synchronize of the next stage, or the last one, ends them)
//
// Each part is reduced by one rank, so every rank receives the same bits, and the fold order is
// the host algorithm's. Device traffic per rank: m copied in, (n-1)/n m read from peers, m copied
// out. Slots are reused every second piece; the `arrived` wait of step 1 is what makes that safe.
#include <fmt/format.h>

#include <cstring>

#include "comm/algorithms/shm_pieces.h"
#include "comm/core/communicator.h"
#include "comm/core/error.h"
#include "comm/core/signature.h"
#include "comm/core/submit.h"
#include "comm/device/device_paths.h"
#include "comm/device/device_reduce.h"
#include "comm/tuning/algorithm_id.h"

namespace plexus::comm::device {

namespace {

constexpr const char* kOpName = "allreduce:cuda_ipc";
constexpr uint32_t kFlagPremul = 1;  // as run_task.cpp's signatures
constexpr uint32_t kFlagDeviceIpc = 2;

// Slots of 4 chunks: a piece costs two stream synchronisations and two waits, so pieces larger
// than the host algorithms' keep that overhead small; the same on every rank (chunk_bytes is
// compared at creation).
size_t ipc_slot_bytes(const plx_comm* comm) {
  const size_t bytes = std::min<size_t>(comm->chunk_bytes * 4, size_t{64} << 20);
  return (std::max<size_t>(bytes, 4096) + 4095) / 4096 * 4096;
}

std::string describe(const Signature& s) {
  const bool device = (s.flags & kFlagDeviceIpc) != 0;
  const auto id = static_cast<AlgorithmId>(s.algorithm);
  return fmt::format("{}(count {}, datatype {}, op {}{}, {} buffers, algorithm {})",
                     collective_name(static_cast<Collective>(s.collective)), s.count,
                     static_cast<int>(s.datatype), static_cast<int>(s.op),
                     (s.flags & kFlagPremul) ? " premul_sum" : "", device ? "device" : "host",
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

#define PLX_CUDA(expr, what) PLX_CHECK(cuda_result((expr), fn, comm->rank, (what)))

plx_result_t allreduce_pieces(const char* fn, plx_comm* comm, DeviceState& state,
                              cudaStream_t stream, const DeviceArgs& args, plx_red_op_t op,
                              const unsigned char* scalar) {
  PeerMemory& peers = *comm->peers;
  PLX_CHECK(peers.usable(kOpName));
  const int n = comm->size, r = comm->rank;
  const plx_datatype_t datatype = args.datatype;
  const size_t elem = plx_datatype_size(datatype);
  const PieceRun run(peers, args.count, state.slot_bytes / elem);
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  const void* sources[kMaxReduceSources];
  for (size_t k = 0; k < run.size(); ++k) {
    const auto [g, off, len] = run[k];
    unsigned char* own = state.slot(r, g);
    // 1. stage
    PLX_CHECK(peers.wait_writable(g, kOpName));
    PLX_CUDA(cudaMemcpyAsync(own, in + off * elem, len * elem, cudaMemcpyDeviceToDevice, stream),
             "staging a piece into the IPC slot");
    if (scalar != nullptr) PLX_CHECK(scale_by(own, own, len, datatype, scalar, stream));
    PLX_CUDA(cudaStreamSynchronize(stream), "waiting for the staged piece");
    peers.arrive(g);
    // 2. reduce my part
    PLX_CHECK(peers.wait_all_arrived(g, kOpName));
    const PieceSpan mine = piece_part(len, n, r, elem);
    if (mine.count > 0) {
      for (int j = 0; j < n; ++j) sources[j] = state.slot((r + j) % n, g) + mine.begin * elem;
      unsigned char* dst = own + mine.begin * elem;
      PLX_CHECK(reduce_sources(dst, sources, n, mine.count, datatype, op, stream));
      if (op == PLX_AVG) {
        PLX_CHECK(divide_by(dst, mine.count, datatype, static_cast<size_t>(n), stream));
      }
    }
    PLX_CUDA(cudaStreamSynchronize(stream), "waiting for the reduction of this rank's part");
    peers.reduced(g);
    // 3. gather every part
    for (int j = 0; j < n; ++j) {
      const int q = (r + j) % n;
      if (q != r) PLX_CHECK(peers.wait_reduced(q, g, kOpName));
      const PieceSpan part = piece_part(len, n, q, elem);
      if (part.count == 0) continue;
      PLX_CUDA(cudaMemcpyAsync(out + (off + part.begin) * elem, state.slot(q, g) + part.begin * elem,
                               part.count * elem, cudaMemcpyDeviceToDevice, stream),
               fmt::format("copying rank {}'s reduced part to recvbuf", q));
    }
  }
  PLX_CUDA(cudaStreamSynchronize(stream), "waiting for the gathered result");
  return PLX_SUCCESS;
}

}  // namespace

bool ipc_allreduce_eligible(plx_comm* comm, const DeviceArgs& args) {
  if (args.collective != Collective::Allreduce || args.count == 0) return false;
  if (!comm->peers || comm->size < 2 || comm->size > kMaxReduceSources) return false;
  // Peer memory of the whole communicator (not of one host of several), ranks numbered alike.
  if (comm->peers->size() != comm->size || comm->peers->rank() != comm->rank) return false;
  if (comm->device && comm->device->ipc == IpcState::Off) return false;
  // Calls the host checks would refuse take the staged path, which reports them.
  const int datatype = static_cast<int>(args.datatype);
  if (datatype < 0 || datatype >= PLX_NUM_DATATYPES) return false;
  plx_red_op_t op = PLX_SUM;
  const unsigned char* scalar = nullptr;
  if (!resolve_op(comm, args.op, args.datatype, &op, &scalar)) return false;
  if (args.send == nullptr || args.recv == nullptr) return false;
  const size_t elem = plx_datatype_size(args.datatype);
  if (args.count > SIZE_MAX / elem) return false;
  const auto send = reinterpret_cast<uintptr_t>(args.send);
  const auto recv = reinterpret_cast<uintptr_t>(args.recv);
  const size_t bytes = args.count * elem;
  return send == recv || send + bytes <= recv || recv + bytes <= send;
}

plx_result_t run_ipc_allreduce(const char* fn, plx_comm* comm, cudaStream_t stream, int device,
                               const DeviceArgs& args, bool* fell_back) {
  *fell_back = false;
  plx_red_op_t op = PLX_SUM;
  const unsigned char* scalar = nullptr;
  resolve_op(comm, args.op, args.datatype, &op, &scalar);  // checked by the eligibility
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
  mine.collective = static_cast<uint8_t>(Collective::Allreduce);
  mine.datatype = static_cast<uint8_t>(args.datatype);
  mine.op = static_cast<uint8_t>(op);
  mine.count = args.count;
  mine.algorithm = static_cast<uint8_t>(AlgorithmId::AllreduceShm);
  mine.flags = kFlagDeviceIpc;
  if (scalar != nullptr) {
    mine.flags |= kFlagPremul;
    std::memcpy(&mine.premul_scalar, scalar, plx_datatype_size(args.datatype));
  }
  comm->last_algorithm = "allreduce:cuda_ipc";
  return submit_body(comm, [&]() -> plx_result_t {
    PLX_CUDA(cudaSetDevice(device), "cudaSetDevice on the thread running the call");
    if (comm->check_args) {
      PLX_CHECK(compare_signatures(*comm->transport, tag_base, mine, describe));
    }
    if (state.ipc == IpcState::Unset) {
      state.slot_bytes = ipc_slot_bytes(comm);
      PLX_CHECK(open_ipc_slots(comm, tag_base, &state));
    }
    if (state.ipc != IpcState::Ready) {
      *fell_back = true;
      return PLX_SUCCESS;
    }
    return allreduce_pieces(fn, comm, state, stream, args, op, scalar);
  });
}

}  // namespace plexus::comm::device
