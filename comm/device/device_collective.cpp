// device_collective.cpp - run_collective() of device_collective.h in a CUDA build: classify the
// buffers, check them, wait for the stream, then the host path, the staged path or CUDA IPC.
#include "comm/device/device_collective.h"

#include <fmt/format.h>

#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/core/submit.h"
#include "comm/device/cuda_devices.h"
#include "comm/device/cuda_driver.h"
#include "comm/device/device_deferred.h"
#include "comm/device/device_paths.h"
#include "comm/device/memory_kind.h"

namespace plexus::comm::device {

namespace {

struct Buffer {
  const char* name;
  const void* ptr;
  size_t count;
  MemoryInfo info;
};

// Device and host buffers may not mix; device buffers must be on the current device.
plx_result_t check_buffers(const char* fn, const plx_comm* comm, const Buffer* buffers, int n,
                           int current, bool* device) {
  const Buffer* first = nullptr;
  for (int i = 0; i < n; ++i) {
    const Buffer& b = buffers[i];
    if (b.count == 0 || b.ptr == nullptr) continue;  // NULL: the host checks name it
    const bool on_device = b.info.kind == MemoryKind::Device;
    if (first == nullptr) {
      first = &b;
      *device = on_device;
    } else if (on_device != *device) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: {} {} is {} memory but {} {} is {} memory; pass "
                                   "every buffer of a call on the device, or every one in host "
                                   "memory",
                                   fn, comm->rank, first->name, first->ptr,
                                   memory_kind_name(first->info.kind), b.name, b.ptr,
                                   memory_kind_name(b.info.kind)));
    }
    if (on_device && b.info.device != current) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: {} {} is on device {} but the current device is "
                                   "{}; call cudaSetDevice({}) before the call",
                                   fn, comm->rank, b.name, b.ptr, b.info.device, current,
                                   b.info.device));
    }
  }
  return PLX_SUCCESS;
}

// The stream must belong to the current device; then its earlier work is waited for.
plx_result_t wait_stream(const char* fn, const plx_comm* comm, cudaStream_t stream,
                         int current) {
  if (stream != nullptr) {
    int stream_device = -1;
    PLX_CHECK(cuda_result(cudaStreamGetDevice(stream, &stream_device), fn, comm->rank,
                          fmt::format("stream {} is not a usable CUDA stream (cudaStreamGetDevice)",
                                      static_cast<const void*>(stream))));
    if (stream_device != current) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: stream {} belongs to device {} but the current "
                                   "device is {}",
                                   fn, comm->rank, static_cast<const void*>(stream),
                                   stream_device, current));
    }
  }
  return cuda_result(cudaStreamSynchronize(stream), fn, comm->rank,
                     fmt::format("waiting for the work queued on stream {}",
                                 static_cast<const void*>(stream)));
}

}  // namespace

plx_result_t run_collective(const char* fn, plx_comm* comm, void* stream_arg,
                            const DeviceArgs& args, const HostRun& host_run) {
  auto stream = static_cast<cudaStream_t>(stream_arg);
  // A host-only process never initialises CUDA here: without the driver loaded and without a
  // stream, no buffer can be device memory.
  if (!cuda_driver_loaded()) {
    if (stream == nullptr) return host_run(args.send, args.recv);
    // Looked at before anything here loads the driver: no stream can exist without it.
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("{}: rank {}: stream {} is not NULL, but this process has not "
                                 "loaded the CUDA driver (libcuda.so.1), so it is no CUDA stream; "
                                 "pass NULL with host buffers",
                                 fn, comm->rank, stream_arg));
  }
  std::string why;
  if (cuda_device_count(&why) == 0) {
    // The driver is loaded but this runtime sees no device (e.g. a driver older than the
    // runtime libplexus carries): the driver may still know a buffer as device memory, which
    // the host algorithm must never touch.
    const Buffer buffers[] = {{"sendbuf", args.send, args.send_count, {}},
                              {"recvbuf", args.recv, args.recv_count, {}}};
    for (const Buffer& b : buffers) {
      if (b.count > 0 && driver_says_device(b.ptr)) {
        return set_error(PLX_ERROR_UNSUPPORTED,
                         fmt::format("{}: rank {}: {} {} is device memory, but CUDA sees no "
                                     "device here ({})",
                                     fn, comm->rank, b.name, b.ptr, why));
      }
    }
    if (stream == nullptr) return host_run(args.send, args.recv);
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("{}: rank {}: stream {} is not NULL, but CUDA sees no device "
                                 "here ({}); pass NULL with host buffers",
                                 fn, comm->rank, stream_arg, why));
  }
  Buffer buffers[] = {{"sendbuf", args.send, args.send_count, classify_pointer(args.send)},
                      {"recvbuf", args.recv, args.recv_count, classify_pointer(args.recv)}};
  int current = 0;
  PLX_CHECK(cuda_result(cudaGetDevice(&current), fn, comm->rank, "cudaGetDevice"));
  bool device = false;
  PLX_CHECK(check_buffers(fn, comm, buffers, 2, current, &device));
  if (!device) {
    // Host, pinned or managed memory: the host algorithm reads it, after the stream's work.
    if (stream != nullptr) PLX_CHECK(wait_stream(fn, comm, stream, current));
    return host_run(args.send, args.recv);
  }
  if (in_group() || args.nonblocking) {
    // Completes later (plx_group_end, plx_wait): staged per call (device_deferred.h).
    if (!args.nonblocking) PLX_CHECK(wait_stream(fn, comm, stream, current));
    return run_deferred(fn, comm, stream, current, args, host_run);
  }
  PLX_CHECK(wait_stream(fn, comm, stream, current));
  if (hmem_p2p_eligible(comm, args)) {  // plx_send / plx_recv over FI_HMEM
    bool fell_back = false;
    PLX_CHECK(run_hmem_p2p(fn, comm, current, args, &fell_back));
    if (!fell_back) return PLX_SUCCESS;
  }
  if (ipc_eligible(comm, args)) {
    bool fell_back = false;
    PLX_CHECK(run_ipc_collective(fn, comm, stream, current, args, &fell_back));
    if (!fell_back) return PLX_SUCCESS;
  }
  return run_staged(fn, comm, stream, args, host_run);
}

}  // namespace plexus::comm::device
