// staged_collective.cpp - a collective on device buffers through pinned host memory: the path
// for every collective on every communicator (several hosts, PLEXUS_SHM=0, or any collective
// the IPC path does not cover).
//
// Pipelined (staged_pipeline.h), for allreduce, reduce, broadcast, send and recv above two
// chunks: chunk k+1 copied in on the communicator's copy stream, chunk k on the host, chunk k-1
// copied out on the caller's stream, through a ring of three pinned slots; CudaChunkCopies below
// are those copies, with one blocking-sync event per slot and direction.
//
// Whole buffer, for the rest (and small calls):
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
#include <initializer_list>
#include <string>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "comm/device/device_paths.h"
#include "comm/device/staged_pipeline.h"

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

static_assert(DeviceState::kCopySlots == kStagingDepth, "one event per ring slot");

// The copy stream and the events of the pipelined path, on `device` (made again when a call
// comes on another device). The stream first: close_copies() frees from it.
plx_result_t open_copies(const char* fn, plx_comm* comm, DeviceState& state, int device) {
  if (state.copy_stream != nullptr && state.copy_device == device) return PLX_SUCCESS;
  state.close_copies();
  cudaStream_t copy_stream = nullptr;
  PLX_CHECK(cuda_result(cudaStreamCreateWithFlags(&copy_stream, cudaStreamNonBlocking), fn,
                        comm->rank, "creating the stream of the pipelined staging copies"));
  state.copy_stream = copy_stream;
  state.copy_device = device;
  for (size_t i = 0; i < DeviceState::kCopySlots; ++i) {
    for (void** slot : {&state.copy_in_done[i], &state.copy_out_done[i]}) {
      cudaEvent_t event = nullptr;
      // Blocking sync: a rank waiting for its copies sleeps instead of spinning a core that
      // another rank of the same host needs.
      const plx_result_t rc = cuda_result(
          cudaEventCreateWithFlags(&event, cudaEventBlockingSync | cudaEventDisableTiming), fn,
          comm->rank, "creating an event of the pipelined staging copies");
      if (rc != PLX_SUCCESS) {
        state.close_copies();
        return rc;
      }
      *slot = event;
    }
  }
  return PLX_SUCCESS;
}

// The copies of a pipelined call: in (device -> pinned) on the copy stream, out (pinned ->
// device) on the caller's stream, each followed by its slot's event, waited for on the host.
class CudaChunkCopies final : public ChunkCopies {
 public:
  CudaChunkCopies(const char* fn, int rank, const StagedChunks& chunks, const DeviceState& state,
                  cudaStream_t stream)
      : fn_(fn), rank_(rank), chunks_(chunks), state_(state), stream_(stream),
        copy_stream_(static_cast<cudaStream_t>(state.copy_stream)) {}

  plx_result_t start_copy_in(size_t k) override {
    if (!copies_in(k)) return PLX_SUCCESS;
    PLX_CHECK(cuda_result(cudaMemcpyAsync(chunks_.staged_send(k), chunks_.device_send(k),
                                          chunks_.bytes(k), cudaMemcpyDeviceToHost, copy_stream_),
                          fn_, rank_, what("copying", k, "of sendbuf", chunks_.send,
                                           "into pinned staging")));
    return cuda_result(cudaEventRecord(in_event(k), copy_stream_), fn_, rank_,
                       "recording the event of a copy into pinned staging");
  }
  plx_result_t wait_copy_in(size_t k) override {
    if (!copies_in(k)) return PLX_SUCCESS;
    return cuda_result(cudaEventSynchronize(in_event(k)), fn_, rank_,
                       what("waiting for the copy of", k, "of sendbuf", chunks_.send,
                            "into pinned staging"));
  }
  plx_result_t start_copy_out(size_t k) override {
    if (!copies_out(k)) return PLX_SUCCESS;
    PLX_CHECK(cuda_result(cudaMemcpyAsync(chunks_.device_recv(k), chunks_.staged_recv(k),
                                          chunks_.bytes(k), cudaMemcpyHostToDevice, stream_),
                          fn_, rank_, what("copying the result of", k, "to recvbuf",
                                           chunks_.recv, "")));
    return cuda_result(cudaEventRecord(out_event(k), stream_), fn_, rank_,
                       "recording the event of a copy to recvbuf");
  }
  plx_result_t wait_copy_out(size_t k) override {
    if (!copies_out(k)) return PLX_SUCCESS;
    return cuda_result(cudaEventSynchronize(out_event(k)), fn_, rank_,
                       what("waiting for the copy of the result of", k, "to recvbuf",
                            chunks_.recv, ""));
  }
  void cancel() override {
    (void)cudaStreamSynchronize(copy_stream_);
    (void)cudaStreamSynchronize(stream_);
    (void)cudaGetLastError();  // the error that stopped the pipeline is already reported
  }

 private:
  bool copies_in(size_t k) const { return chunks_.stage_send && chunks_.bytes(k) > 0; }
  bool copies_out(size_t k) const { return chunks_.stage_recv && chunks_.bytes(k) > 0; }
  cudaEvent_t in_event(size_t k) const {
    return static_cast<cudaEvent_t>(state_.copy_in_done[k % kStagingDepth]);
  }
  cudaEvent_t out_event(size_t k) const {
    return static_cast<cudaEvent_t>(state_.copy_out_done[k % kStagingDepth]);
  }
  // "copying chunk 3 of 16 (65536 bytes at byte 196608) of sendbuf 0x7f.. into pinned staging"
  std::string what(const char* verb, size_t k, const char* buffer, const void* ptr,
                   const char* where) const {
    return fmt::format("{} chunk {} of {} ({} bytes at byte {}) {} {}{}{}", verb, k,
                       chunks_.chunks(), chunks_.bytes(k), chunks_.first(k) * chunks_.elem_bytes,
                       buffer, ptr, *where ? " " : "", where);
  }

  const char* fn_;
  int rank_;
  const StagedChunks& chunks_;
  const DeviceState& state_;
  cudaStream_t stream_;
  cudaStream_t copy_stream_;
};

// A call of `count` elements through the pipeline (pipelined() said yes).
plx_result_t run_pipelined(const char* fn, plx_comm* comm, cudaStream_t stream,
                           const DeviceArgs& args, size_t count) {
  StagedChunks chunks;
  chunks.count = count;
  chunks.elem_bytes = plx_datatype_size(args.datatype);
  chunks.chunk_elems = staging_chunk_elems(chunks.elem_bytes, comm->chunk_bytes);
  chunks.send = args.send;
  chunks.recv = args.recv;
  chunks.stage_send = args.send != nullptr && args.send_count > 0;
  chunks.stage_recv = args.recv != nullptr && args.recv_count > 0;
  DeviceState& state = device_state(comm);
  int device = 0;
  PLX_CHECK(cuda_result(cudaGetDevice(&device), fn, comm->rank, "cudaGetDevice"));
  PLX_CHECK(reserve_pinned(fn, comm, state, chunks.ring_bytes()));
  PLX_CHECK(open_copies(fn, comm, state, device));
  chunks.ring = static_cast<unsigned char*>(state.pinned);
  log_message(LogLevel::Info,
              "{}: rank {}: {} elements staged in {} chunks of up to {} bytes, pipelined through "
              "{} pinned slots",
              fn, comm->rank, count, chunks.chunks(), chunks.chunk_elems * chunks.elem_bytes,
              kStagingDepth);
  CudaChunkCopies copies(fn, comm->rank, chunks, state, stream);
  return run_staged_pipeline(chunks, copies, args.range_run);
}

}  // namespace

plx_result_t run_staged(const char* fn, plx_comm* comm, cudaStream_t stream,
                        const DeviceArgs& args, const HostRun& host_run) {
  ActiveCall active(comm);
  // For the pipelined calls every used buffer holds the call's count (pipelined() checks).
  const size_t call_count = std::max(args.send_count, args.recv_count);
  if (pipelined(args, call_count, comm->chunk_bytes)) {
    return run_pipelined(fn, comm, stream, args, call_count);
  }
  const size_t elem = plx_datatype_size(args.datatype);
  if (elem == 0 || args.send_count > SIZE_MAX / elem / 2 || args.recv_count > SIZE_MAX / elem / 2) {
    return host_run(args.send, args.recv);  // too large to stage (see run_collective)
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
