// ipc_slots.cpp - opening the CUDA IPC slots of a one-host communicator (device_paths.h).
//
// Collective, on the first device-buffer call that takes the IPC path (ipc_collective.cpp:
// allreduce, reduce, broadcast, reduce_scatter or allgather; every rank calls it, as NCCL
// requires):
//   1. allocate   this rank's two slots (2 x slot_bytes, one cudaMalloc) on the current device
//                 and export them (cudaIpcGetMemHandle)
//   2. exchange   [ok][handle] to and from every peer (tag_base | 0), over the transport
//   3. map        every peer's slots (cudaIpcOpenMemHandle with cudaIpcMemLazyEnablePeerAccess;
//                 ranks sharing one GPU work too: the handle is opened in another process)
//   4. vote       [all mapped] to and from every peer (tag_base | 1): Ready only if every rank
//                 mapped every peer; otherwise every rank unmaps and frees, Off, and the
//                 communicator's device-buffer collectives take the staged path from then on.
// The slots are mapped once and reused by every later call; they are unmapped and freed with
// the communicator (DeviceState's destructor).
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

#include "comm/algorithms/deliberate_leak.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "comm/device/device_paths.h"

namespace plexus::comm::device {

namespace {

constexpr size_t kRecordBytes = 1 + sizeof(cudaIpcMemHandle_t);

// Sends `mine` (bytes) to every peer and receives each peer's into theirs[peer * bytes]. After a
// failure the transport may still write into what was posted: that is leaked, as run_task does.
plx_result_t exchange(Transport& transport, uint64_t tag, const unsigned char* mine, size_t bytes,
                      std::vector<unsigned char>* theirs) {
  const int n = transport.size(), r = transport.rank();
  const size_t all_bytes = static_cast<size_t>(n) * bytes;
  auto received = std::make_unique<unsigned char[]>(all_bytes);
  auto sent = std::make_unique<unsigned char[]>(bytes);
  std::memcpy(sent.get(), mine, bytes);
  std::memcpy(received.get() + static_cast<size_t>(r) * bytes, mine, bytes);
  auto requests = std::make_unique<Request[]>(2 * static_cast<size_t>(n));
  std::vector<Request*> posted;
  plx_result_t result = PLX_SUCCESS;
  for (int q = 0; q < n && result == PLX_SUCCESS; ++q) {
    if (q == r) continue;
    Request& recv = requests[2 * static_cast<size_t>(q)];
    result = transport.post_recv(q, tag, received.get() + static_cast<size_t>(q) * bytes, bytes,
                                 recv);
    if (result != PLX_SUCCESS) break;
    posted.push_back(&recv);
    Request& send = requests[2 * static_cast<size_t>(q) + 1];
    result = transport.post_send(q, tag, sent.get(), bytes, send);
    if (result == PLX_SUCCESS) posted.push_back(&send);
  }
  if (result == PLX_SUCCESS) result = transport.wait_all(posted.data(), posted.size());
  if (result != PLX_SUCCESS) {
    leak_on_purpose(requests);
    leak_on_purpose(received);
    leak_on_purpose(sent);
    return result;
  }
  theirs->assign(received.get(), received.get() + all_bytes);
  return PLX_SUCCESS;
}

void log_failure(int rank, const char* what, cudaError_t err) {
  (void)cudaGetLastError();
  log_message(LogLevel::Warn, "rank {}: CUDA IPC off: {}: {}: {}", rank, what,
              cudaGetErrorName(err), cudaGetErrorString(err));
}

}  // namespace

plx_result_t open_ipc_slots(plx_comm* comm, uint64_t tag_base, DeviceState* state) {
  const int n = comm->size, r = comm->rank;
  Transport& transport = *comm->transport;
  state->peer_slots.assign(static_cast<size_t>(n), nullptr);
  (void)cudaGetDevice(&state->ipc_device);

  // 1. allocate and export
  unsigned char record[kRecordBytes] = {};
  cudaError_t err = cudaMalloc(&state->own_slots, 2 * state->slot_bytes);
  if (err != cudaSuccess) {
    state->own_slots = nullptr;
    log_failure(r, "cudaMalloc of the IPC slots", err);
  } else {
    cudaIpcMemHandle_t handle{};
    err = cudaIpcGetMemHandle(&handle, state->own_slots);
    if (err != cudaSuccess) {
      log_failure(r, "cudaIpcGetMemHandle", err);
    } else {
      record[0] = 1;
      std::memcpy(record + 1, &handle, sizeof(handle));
    }
  }
  state->peer_slots[static_cast<size_t>(r)] = state->own_slots;

  // 2. exchange
  std::vector<unsigned char> records;
  PLX_CHECK(exchange(transport, tag_base | 0, record, kRecordBytes, &records));

  // 3. map
  unsigned char mapped = record[0];
  for (int q = 0; q < n && mapped; ++q) {
    const unsigned char* theirs = records.data() + static_cast<size_t>(q) * kRecordBytes;
    if (q == r) continue;
    if (theirs[0] == 0) {
      mapped = 0;  // that rank logs why
      break;
    }
    cudaIpcMemHandle_t handle{};
    std::memcpy(&handle, theirs + 1, sizeof(handle));
    void* peer = nullptr;
    err = cudaIpcOpenMemHandle(&peer, handle, cudaIpcMemLazyEnablePeerAccess);
    if (err != cudaSuccess) {
      log_failure(r, fmt::format("cudaIpcOpenMemHandle of rank {}'s slots", q).c_str(), err);
      mapped = 0;
      break;
    }
    state->peer_slots[static_cast<size_t>(q)] = peer;
  }

  // 4. vote
  std::vector<unsigned char> votes;
  PLX_CHECK(exchange(transport, tag_base | 1, &mapped, 1, &votes));
  bool all = true;
  for (unsigned char v : votes) all = all && v != 0;
  if (!all) {
    state->close_ipc();  // Off
    log_message(LogLevel::Info, "rank {}: CUDA IPC slots unavailable; device-buffer collectives "
                "use pinned host staging", r);
    return PLX_SUCCESS;
  }
  state->ipc = IpcState::Ready;
  log_message(LogLevel::Info, "rank {}: CUDA IPC: {} ranks on device {}, slots of 2 x {} bytes",
              r, n, state->ipc_device, state->slot_bytes);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::device
