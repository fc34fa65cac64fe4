// staged_collective.cpp - a collective on device buffers through pinned host memory: the path
// for every collective on every communicator (several hosts, PLEXUS_SHM=0, or any collective
// the IPC path does not cover).
//
//   1. copy in   the bytes the call reads (sendbuf; recvbuf too when its holes must survive)
//                from the device into the communicator's pinned buffer, on the stream; wait
//   2. host      the host collective on the pinned copies (the algorithm the communicator
//                would choose for host buffers; its own signature check)
//   3. copy out  the bytes the call wrote from pinned memory back to recvbuf, on the stream; wait
//
// Layout in the pinned buffer: when sendbuf and recvbuf overlap (an in-place layout), their
// union is staged as one range, so the host call sees the same in-place layout; otherwise
// sendbuf's bytes, then recvbuf's from the next 256-byte boundary. The pinned buffer grows to
// the largest call (cudaMallocHost) and lives as long as the communicator.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "comm/core/communicator.h"
#include "comm/core/error.h"
#include "comm/device/device_paths.h"

namespace plexus::comm::device {

namespace {

constexpr size_t kAlign = 256;

size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

plx_result_t reserve_pinned(const char* fn, plx_comm* comm, DeviceState& state, size_t bytes) {
  if (bytes <= state.pinned_bytes) return PLX_SUCCESS;
  const size_t grown = round_up(std::max(bytes, state.pinned_bytes * 2), size_t{2} << 20);
  if (state.pinned != nullptr) {
    (void)cudaFreeHost(state.pinned);
    state.pinned = nullptr;
    state.pinned_bytes = 0;
  }
  void* pinned = nullptr;
  PLX_CHECK(cuda_result(cudaMallocHost(&pinned, grown), fn, comm->rank,
                        fmt::format("cudaMallocHost of {} bytes of pinned staging", grown)));
  state.pinned = pinned;
  state.pinned_bytes = grown;
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t run_staged(const char* fn, plx_comm* comm, cudaStream_t stream,
                        const DeviceArgs& args, const HostRun& host_run) {
  ActiveCall active(comm);
  const size_t elem = plx_datatype_size(args.datatype);
  if (elem == 0 || args.send_count > SIZE_MAX / elem / 2 || args.recv_count > SIZE_MAX / elem / 2) {
    return host_run(args.send, args.recv);  // the host checks name the bad argument
  }
  const size_t send_bytes = args.send ? args.send_count * elem : 0;
  const size_t recv_bytes = args.recv ? args.recv_count * elem : 0;
  const auto send_lo = reinterpret_cast<uintptr_t>(args.send);
  const auto recv_lo = reinterpret_cast<uintptr_t>(args.recv);
  const bool overlap = send_bytes > 0 && recv_bytes > 0 && send_lo < recv_lo + recv_bytes &&
                       recv_lo < send_lo + send_bytes;
  // Where each buffer's first byte goes, as offsets into the pinned buffer.
  size_t send_at = 0;
  size_t recv_at = 0;
  size_t total = 0;
  if (overlap) {
    const uintptr_t lo = std::min(send_lo, recv_lo);
    send_at = send_lo - lo;
    recv_at = recv_lo - lo;
    total = std::max(send_lo + send_bytes, recv_lo + recv_bytes) - lo;
  } else {
    recv_at = round_up(send_bytes, kAlign);
    total = recv_at + recv_bytes;
  }
  DeviceState& state = device_state(comm);
  PLX_CHECK(reserve_pinned(fn, comm, state, std::max<size_t>(total, 1)));
  auto* pinned = static_cast<unsigned char*>(state.pinned);
  const void* host_send = send_bytes > 0 ? pinned + send_at : args.send;
  void* host_recv = recv_bytes > 0 ? pinned + recv_at : args.recv;

  // 1. copy in
  if (send_bytes > 0) {
    PLX_CHECK(cuda_result(cudaMemcpyAsync(pinned + send_at, args.send, send_bytes,
                                          cudaMemcpyDeviceToHost, stream),
                          fn, comm->rank, fmt::format("copying sendbuf {} ({} bytes) to pinned "
                                                      "staging", args.send, send_bytes)));
  }
  if (args.recv_read && recv_bytes > 0) {
    PLX_CHECK(cuda_result(cudaMemcpyAsync(pinned + recv_at, args.recv, recv_bytes,
                                          cudaMemcpyDeviceToHost, stream),
                          fn, comm->rank, fmt::format("copying recvbuf {} ({} bytes) to pinned "
                                                      "staging", args.recv, recv_bytes)));
  }
  PLX_CHECK(cuda_result(cudaStreamSynchronize(stream), fn, comm->rank,
                        "waiting for the copies into pinned staging"));
  // 2. host
  PLX_CHECK(host_run(host_send, host_recv));
  // 3. copy out
  if (recv_bytes > 0) {
    PLX_CHECK(cuda_result(cudaMemcpyAsync(args.recv, pinned + recv_at, recv_bytes,
                                          cudaMemcpyHostToDevice, stream),
                          fn, comm->rank, fmt::format("copying the result ({} bytes) to recvbuf "
                                                      "{}", recv_bytes, args.recv)));
    PLX_CHECK(cuda_result(cudaStreamSynchronize(stream), fn, comm->rank,
                          "waiting for the copy of the result to recvbuf"));
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::device
