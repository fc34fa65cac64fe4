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

// Whether the call may run over CUDA IPC: allreduce, reduce, broadcast, reduce_scatter or
// allgather with count > 0 on a communicator of 2..16 ranks on one host with peer memory, the
// IPC slots not known to have failed, and this rank's buffers in the call's plain or in-place
// layout. The same answer on every rank as long as every rank passes device buffers (a rank
// answering otherwise runs the staged path, whose signature then mismatches: every rank gets
// PLX_ERROR_MISMATCH).
bool ipc_eligible(plx_comm* comm, const DeviceArgs& args);

// The call through the peers' IPC-mapped device slots (ipc_collective.cpp, steps of
// ipc_schedule.h): compares the signature, opens the slots on first use (*fell_back = true, and
// nothing done, when some rank could not: the caller then runs the staged path), and leaves the
// result in args.recv. Runs as a task of the communicator's executor; `device` is made current
// on its thread.
plx_result_t run_ipc_collective(const char* fn, plx_comm* comm, cudaStream_t stream, int device,
                                const DeviceArgs& args, bool* fell_back);

// Collective over the ranks of a one-host communicator (ipc_slots.cpp): allocates this rank's two
// slots of state->slot_bytes on the current device, exchanges IPC handles with every peer over
// the transport (tags tag_base | 0 and | 1) and maps theirs; state->ipc is Ready on every rank,
// or Off on every rank (each rank's failure is logged) when any rank failed. Errors are the
// transport's (a peer lost, a timeout).
plx_result_t open_ipc_slots(plx_comm* comm, uint64_t tag_base, DeviceState* state);

// Whether a blocking plx_send / plx_recv of device buffers may go straight to the transport
// (hmem_p2p.cpp): args.peer is set, a buffer is used (count > 0), and the transport can take
// CUDA device memory (Transport::hmem_supported: FI_HMEM, no registration failed).
bool hmem_p2p_eligible(plx_comm* comm, const DeviceArgs& args);

// The send or receive through the transport's FI_HMEM path (hmem_p2p.cpp): the device buffer is
// registered and given to the provider, in the same messages and tags as the staged path would
// send. *fell_back = true, and nothing sent, when the provider refused to register the memory:
// the caller then runs the staged path. `device` is made current on the executor's thread.
plx_result_t run_hmem_p2p(const char* fn, plx_comm* comm, int device, const DeviceArgs& args,
                          bool* fell_back);

}  // namespace plexus::comm::device
