// device_deferred.h - device buffers in calls that complete later: the non-blocking forms
// (plx_iallreduce ...) and calls inside plx_group_start/plx_group_end (issue 6).
//
// Such a call returns before its operation runs, so it cannot copy its result back itself, and
// several may be in flight at once, so the communicator's one staging buffer (staged_collective)
// cannot serve them. Each call therefore stages through pinned memory of its own:
//
//   1. wait     the device work the call's inputs depend on (the caller: the stream given to a
//               grouped blocking call; cudaDeviceSynchronize for the non-blocking forms, which
//               take no stream)
//   2. copy in  the bytes the call reads (sendbuf; recvbuf too when its holes must survive) into
//               the call's own pinned memory; wait for the copies
//   3. queue    the host call on the pinned copies (the shared body: it joins the group, or is
//               queued with a request, exactly as a call on host buffers), carrying a completion
//               step (comm/core/submit.h CompletionScope)
//   4. complete once the operation has run, on the thread that completes it (plx_wait, plx_test,
//               plx_waitall, plx_group_end): copy the bytes the call wrote back to recvbuf (only
//               on success), wait, free the pinned memory
//
// The pinned layout is the staged path's: overlapping send and receive buffers (the in-place
// layouts) are staged as one range, so the host call sees the same in-place layout; otherwise
// sendbuf's bytes, then recvbuf's from the next 256-byte boundary.
//
// Failures name the function, the rank and the argument. Pinned memory is freed at every
// failure before the operation is queued, and at completion after success or after a failure
// that left no transfer posted into it (PLX_ERROR_ABORTED: the endpoint is closed;
// PLX_ERROR_MISMATCH and argument errors: nothing was sent). After any other failure (a timeout,
// a lost peer) the transport may still write into the staging, so it is leaked on purpose, as
// run_task leaks its posted requests, and a warning says how many bytes.
//
// The copies go through a CopyEngine: the CUDA build's (device_deferred_cuda.cpp: cudaMallocHost,
// cudaMemcpyAsync on the call's stream, made current on the completing thread) or a host one in
// the tests, so steps 2 to 4 run and are tested on a CPU (tests/comm/deferred_staging_test.cpp).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "comm/device/device_collective.h"
#include "plexus/plexus.h"

struct plx_comm;

namespace plexus::comm::device {

// How a deferred call's bytes move between its buffers and its pinned memory. One engine per
// call, shared by the call and its completion step; used by one thread at a time (the caller,
// then the completing thread). Errors are set with set_error and name the call's function, rank
// and `what` (the argument and the copy).
class CopyEngine {
 public:
  virtual ~CopyEngine() = default;
  // Pinned host memory of `bytes` (> 0) bytes for the call.
  virtual plx_result_t allocate(size_t bytes, void** pinned, const std::string& what) = 0;
  // Frees what allocate gave. Never fails (a failure is logged).
  virtual void release(void* pinned) noexcept = 0;
  // Starts copying `bytes` from the caller's buffer into pinned memory, or back; either may
  // return before the copy is done.
  virtual plx_result_t to_pinned(void* pinned, const void* buffer, size_t bytes,
                                 const std::string& what) = 0;
  virtual plx_result_t from_pinned(void* buffer, const void* pinned, size_t bytes,
                                   const std::string& what) = 0;
  // Waits until every copy started before is done.
  virtual plx_result_t wait(const std::string& what) = 0;
};

// Where each buffer's bytes go in the call's pinned memory (offsets), and how many bytes.
struct PinnedLayout {
  size_t send_bytes = 0;  // 0: sendbuf is not staged (not used on this rank, or NULL)
  size_t recv_bytes = 0;  // 0: recvbuf is not staged
  size_t send_at = 0;
  size_t recv_at = 0;
  size_t total_bytes = 0;  // at least 1
};

// The layout of args (see the file comment). False when a byte size overflows size_t.
bool pinned_layout(const DeviceArgs& args, PinnedLayout* out);

// Whether a failed operation may have left transfers posted into its buffers (see the file
// comment): its pinned memory is then leaked rather than freed.
bool may_still_be_written(plx_result_t outcome);

// Steps 2 to 4 of the file comment for one call: stages args' buffers through `engine`, runs
// `queue` on the pinned copies with the completion step attached, and returns queue's result.
// `fn` must outlive the operation (a string literal: the C ABI function's name).
plx_result_t stage_deferred(const char* fn, int rank, const DeviceArgs& args,
                            std::shared_ptr<CopyEngine> engine, const HostRun& queue);

// The whole of it for one call with device buffers on device `device` (the current one), in a
// CUDA build (device_collective.cpp calls it for a call inside a group or a non-blocking one,
// args.nonblocking, after checking the buffers and, for a grouped call, waiting for `stream`).
// Without CUDA it returns PLX_ERROR_UNSUPPORTED (device_deferred_stub.cpp).
plx_result_t run_deferred(const char* fn, plx_comm* comm, void* stream, int device,
                          const DeviceArgs& args, const HostRun& queue);

}  // namespace plexus::comm::device
