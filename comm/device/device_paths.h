// device_paths.h - the two ways a device-buffer collective runs in a CUDA build
// (device_collective.h chooses): staged through pinned host memory, or over CUDA IPC slots
// between the ranks of one host. Internal to comm/device; needs the CUDA runtime header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "comm/device/device_collective.h"
#include "comm/device/device_state.h"

namespace plexus::comm::device {

// PLX_SUCCESS for cudaSuccess; otherwise clears CUDA's last error and sets a message
// "fn: rank R: what: cudaErrorX: text". cudaErrorInvalidResourceHandle and cudaErrorInvalidValue
// (a bad stream, a bad pointer) give PLX_ERROR_INVALID_ARGUMENT, the rest PLX_ERROR_SYSTEM.
plx_result_t cuda_result(cudaError_t err, const char* fn, int rank, const std::string& what);

// The communicator's device state, made on first use.
DeviceState& device_state(plx_comm* comm);

// device -> pinned -> host_run -> pinned -> device, the copies on `stream`; returns once the
// results are in args.recv (staged_collective.cpp).
plx_result_t run_staged(const char* fn, plx_comm* comm, cudaStream_t stream,
                        const DeviceArgs& args, const HostRun& host_run);

// Whether allreduce over CUDA IPC may run on this communicator: one host with peer memory, 2..16
// ranks, and the IPC slots not known to have failed. The same answer on every rank of a
// communicator as long as every rank passes device buffers.
bool ipc_allreduce_eligible(plx_comm* comm, const DeviceArgs& args);

// Allreduce through the peers' IPC-mapped device slots (ipc_allreduce.cpp): compares the
// signature, opens the slots on first use (*fell_back = true, and nothing done, when some rank
// could not: the caller then runs the staged path), and leaves the result in args.recv.
// Runs as a task of the communicator's executor; `device` is made current on its thread.
plx_result_t run_ipc_allreduce(const char* fn, plx_comm* comm, cudaStream_t stream, int device,
                               const DeviceArgs& args, bool* fell_back);

// Collective over the ranks of a one-host communicator (ipc_slots.cpp): allocates this rank's two
// slots of state->slot_bytes on the current device, exchanges IPC handles with every peer over
// the transport (tags tag_base | 0 and | 1) and maps theirs; state->ipc is Ready on every rank,
// or Off on every rank (each rank's failure is logged) when any rank failed. Errors are the
// transport's (a peer lost, a timeout).
plx_result_t open_ipc_slots(plx_comm* comm, uint64_t tag_base, DeviceState* state);

}  // namespace plexus::comm::device
