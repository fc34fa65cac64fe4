// device_state.h - what a communicator keeps for its collectives on device buffers (issue 6):
// the pinned host staging buffer of the staged path (and the second stream and events of its
// pipelined form), and the CUDA IPC slots of the one-host path.
//
// Owned by plx_comm (plx_comm::device), made on the first device-buffer call and freed with the
// communicator. It holds no CUDA types, so that communicator.h needs no CUDA header; the CUDA
// build frees what it holds (device_state.cpp), the build without CUDA never allocates anything.
// Used by one thread at a time: the thread making a blocking call with device buffers, or the
// executor running that call's task while the caller waits.
#pragma once

#include <cstddef>
#include <vector>

namespace plexus::comm::device {

// Whether the one-host CUDA IPC path is open: Unset until the first device-buffer collective of
// a one-host communicator tries to open it; Ready when every rank mapped every peer's slots; Off
// when some rank could not (or there is no peer memory), the same on every rank.
enum class IpcState { Unset, Ready, Off };

struct DeviceState {
  // Pinned host staging (cudaMallocHost), grown on demand, never shrunk. A pipelined call
  // (staged_pipeline.h) uses its first ring_bytes() as the ring of chunk slots.
  void* pinned = nullptr;
  size_t pinned_bytes = 0;

  // The pipelined staged path: a non-blocking stream (cudaStream_t) for the copies into pinned
  // memory, and per ring slot one event (cudaEvent_t, blocking sync, no timing) for its copy in
  // and one for its copy out; made on device `copy_device` by the first pipelined call.
  static constexpr size_t kCopySlots = 3;  // staged_pipeline.h's kStagingDepth
  int copy_device = -1;
  void* copy_stream = nullptr;
  void* copy_in_done[kCopySlots] = {};
  void* copy_out_done[kCopySlots] = {};

  // CUDA IPC: this rank's two device slots of slot_bytes in one cudaMalloc (own_slots), and
  // every rank's slots as mapped here (peer_slots[rank]; peer_slots[own rank] == own_slots),
  // opened with cudaIpcOpenMemHandle, on device `ipc_device`.
  IpcState ipc = IpcState::Unset;
  int ipc_device = -1;
  size_t slot_bytes = 0;
  void* own_slots = nullptr;
  std::vector<void*> peer_slots;

  // Buffer `piece % 2` of `rank`'s slots.
  unsigned char* slot(int rank, unsigned piece) const {
    return static_cast<unsigned char*>(peer_slots[static_cast<size_t>(rank)]) +
           (piece % 2) * slot_bytes;
  }

  // Closes the peers' mappings and frees the slots (ipc becomes Off); keeps the pinned buffer.
  void close_ipc();
  // Destroys the copy stream and events (CUDA build; nothing to do without CUDA).
  void close_copies();

  DeviceState() = default;
  DeviceState(const DeviceState&) = delete;
  DeviceState& operator=(const DeviceState&) = delete;
  ~DeviceState();  // close_ipc(), close_copies(), then frees the pinned buffer
};

}  // namespace plexus::comm::device
