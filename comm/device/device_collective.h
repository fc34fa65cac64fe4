// device_collective.h - how a blocking collective runs when its buffers are on a GPU or it is
// given a stream (issue 6): the one entry point the C ABI layer calls.
//
// Semantics, as NCCL's "stream-ordered" ones but completed on return:
//  - The call first waits for the work already queued on `stream` (cudaStreamSynchronize; NULL
//    is the legacy default stream), so the inputs written by earlier kernels are read.
//  - Device buffers go through one of two paths, and the result is in place when it returns;
//    later work on the stream sees it:
//      staged   device -> pinned host staging (per communicator, grown on demand) -> the host
//               algorithm the communicator would choose -> pinned -> device, copies on `stream`;
//               allreduce, reduce, broadcast, send and recv above two chunks are pipelined
//               chunk by chunk through a ring of pinned slots (staged_pipeline.h);
//      cuda_ipc a one-host communicator with peer memory: allreduce, reduce, broadcast,
//               reduce_scatter and allgather read their peers' device slots mapped with CUDA
//               IPC (ipc_collective.cpp); every rank must then pass device buffers.
//  - Host, pinned and managed buffers are host memory: the host algorithm reads them directly
//    (after the stream wait when a stream is given).
//
// Checks (the message names the function, rank, argument and value):
//   PLX_ERROR_INVALID_ARGUMENT  device and host buffers mixed in one call; a device buffer of
//                               another GPU than the current one; a stream CUDA rejects.
//   PLX_ERROR_UNSUPPORTED       a stream, or a device buffer, in a build without CUDA or on a
//                               machine where CUDA sees no device.
// Device buffers inside a group or in a non-blocking call (args.nonblocking) are staged through
// pinned memory of the call's own and copied back when the group or request completes
// (device_deferred.h); the IPC path is for blocking calls outside groups.
// Buffers are classified only when the call gives a stream or the process has loaded the CUDA
// driver (libcuda.so.1): a host-only program never initialises CUDA through Plexus.
#pragma once

#include <cstddef>
#include <functional>

#include "comm/algorithms/algorithms.h"
#include "plexus/plexus.h"

struct plx_comm;

namespace plexus::comm::device {

// Runs the host collective on `count` elements at the given host (pinned) buffers, blocking: one
// chunk of a pipelined staged call (staged_pipeline.h). Given by the calls whose elements are
// independent (allreduce, reduce, broadcast, send, recv), empty for the others.
using HostRangeRun = std::function<plx_result_t(const void* send, void* recv, size_t count)>;

// What the device layer needs to know of one call on this rank. Counts are elements of
// `datatype`; a buffer the call does not use on this rank (reduce's recvbuf off the root, say)
// has count 0.
struct DeviceArgs {
  Collective collective = Collective::Allreduce;
  plx_datatype_t datatype = PLX_FLOAT32;
  const void* send = nullptr;
  size_t send_count = 0;  // elements this rank's call reads from send
  void* recv = nullptr;
  size_t recv_count = 0;  // elements this rank's call may write to recv
  // recv's old contents must survive where the call writes nothing (alltoallv's holes): the
  // staged path copies recv in as well as out.
  bool recv_read = false;
  // A non-blocking form (plx_iallreduce ...): device buffers are staged per call and copied
  // back when the request completes (device_deferred.h), as inside a group.
  bool nonblocking = false;
  // For the CUDA IPC path (allreduce, reduce, broadcast, reduce_scatter, allgather): the call's
  // count as its signature has it (recvcount for reduce_scatter, sendcount for allgather), its
  // op and its root.
  size_t count = 0;
  plx_red_op_t op = PLX_SUM;
  int root = 0;
  // plx_send / plx_recv (blocking): the peer, for the FI_HMEM path (hmem_p2p.cpp); else -1.
  int peer = -1;
  // The call on a range of its elements, for the pipelined staged path; empty: whole buffer.
  HostRangeRun range_run;
};

// Runs the host collective on the given host (or pinned) buffers, blocking.
using HostRun = std::function<plx_result_t(const void* send, void* recv)>;

// Runs one blocking call (see the file comment). The caller has checked the arguments already
// (c_api_collectives.cpp: check_X() of c_api_calls.h, so no buffer is NULL with a count and no
// byte size overflows); `host_run` submits the call without checking again. A byte size above
// SIZE_MAX / 2, which no real buffer has, is not staged: the host call runs on the caller's
// buffers.
plx_result_t run_collective(const char* fn, plx_comm* comm, void* stream, const DeviceArgs& args,
                            const HostRun& host_run);

}  // namespace plexus::comm::device
