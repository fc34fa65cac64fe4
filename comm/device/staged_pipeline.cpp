// staged_pipeline.cpp - the chunks and the schedule of a pipelined staged call
// (staged_pipeline.h). No CUDA here: both builds compile it, and the CPU test drives it.
#include "comm/device/staged_pipeline.h"

#include <algorithm>
#include <cstdint>

#include "comm/base/error.h"

namespace plexus::comm::device {

namespace {

size_t round_up(size_t bytes, size_t to) { return (bytes + to - 1) / to * to; }

// The caller's pointer advanced by `bytes`.
const unsigned char* advance(const void* p, size_t bytes) {
  return static_cast<const unsigned char*>(p) + bytes;
}

// Calls cancel() on the copies unless dismissed: every early return of the schedule drains.
class CancelOnExit {
 public:
  explicit CancelOnExit(ChunkCopies& copies) : copies_(copies) {}
  ~CancelOnExit() {
    if (armed_) copies_.cancel();
  }
  CancelOnExit(const CancelOnExit&) = delete;
  CancelOnExit& operator=(const CancelOnExit&) = delete;
  void dismiss() { armed_ = false; }

 private:
  ChunkCopies& copies_;
  bool armed_ = true;
};

}  // namespace

size_t staging_chunk_elems(size_t elem_bytes, size_t chunk_bytes) {
  if (elem_bytes == 0) return 1;
  const size_t bytes = std::clamp(chunk_bytes, kMinStagingChunkBytes, kMaxStagingChunkBytes);
  return std::max<size_t>(bytes / elem_bytes, 1);
}

bool pipelined(const DeviceArgs& args, size_t count, size_t chunk_bytes) {
  if (!args.range_run || args.recv_read) return false;
  const size_t elem = plx_datatype_size(args.datatype);
  if (elem == 0 || count > SIZE_MAX / elem) return false;
  if (count <= 2 * staging_chunk_elems(elem, chunk_bytes)) return false;
  const bool send = args.send != nullptr && args.send_count > 0;
  const bool recv = args.recv != nullptr && args.recv_count > 0;
  if ((send && args.send_count != count) || (recv && args.recv_count != count)) return false;
  if (send && recv && args.send != args.recv) {
    const auto s = reinterpret_cast<uintptr_t>(args.send);
    const auto r = reinterpret_cast<uintptr_t>(args.recv);
    const size_t bytes = count * elem;
    if (s < r + bytes && r < s + bytes) return false;  // overlapping, not equal
  }
  return true;
}

size_t StagedChunks::chunks() const {
  if (count == 0) return 1;
  return count / chunk_elems + (count % chunk_elems != 0 ? 1 : 0);
}

size_t StagedChunks::elems(size_t k) const {
  const size_t at = first(k);
  return at >= count ? 0 : std::min(chunk_elems, count - at);
}

size_t StagedChunks::area_bytes() const {
  return round_up(std::max<size_t>(chunk_elems * elem_bytes, 1), kStagingAlign);
}

size_t StagedChunks::ring_bytes() const {
  const size_t areas = in_place() ? 1 : size_t{stage_send} + size_t{stage_recv};
  return kStagingDepth * std::max<size_t>(areas, 1) * area_bytes();
}

const unsigned char* StagedChunks::device_send(size_t k) const {
  return advance(send, first(k) * elem_bytes);
}

unsigned char* StagedChunks::device_recv(size_t k) const {
  return static_cast<unsigned char*>(recv) + first(k) * elem_bytes;
}

// Slot s: [send area][recv area], or one area when in place or when one side is not staged.
unsigned char* StagedChunks::staged_send(size_t k) const {
  const size_t per_slot = ring_bytes() / kStagingDepth;
  return ring + (k % kStagingDepth) * per_slot;
}

unsigned char* StagedChunks::staged_recv(size_t k) const {
  const size_t per_slot = ring_bytes() / kStagingDepth;
  const bool second_area = stage_send && !in_place();
  return ring + (k % kStagingDepth) * per_slot + (second_area ? area_bytes() : 0);
}

const void* StagedChunks::host_send(size_t k) const {
  return stage_send ? staged_send(k) : send;
}

void* StagedChunks::host_recv(size_t k) const { return stage_recv ? staged_recv(k) : recv; }

plx_result_t run_staged_pipeline(const StagedChunks& chunks, ChunkCopies& copies,
                                 const HostRangeRun& run) {
  CancelOnExit drain(copies);
  const size_t n = chunks.chunks();
  PLX_CHECK(copies.start_copy_in(0));
  for (size_t k = 0; k < n; ++k) {
    if (k + 1 < n) {
      // Chunk k+1 goes to the slot of chunk k+1-depth: its copy out must be done.
      if (k + 1 >= kStagingDepth) PLX_CHECK(copies.wait_copy_out(k + 1 - kStagingDepth));
      PLX_CHECK(copies.start_copy_in(k + 1));
    }
    PLX_CHECK(copies.wait_copy_in(k));
    PLX_CHECK(run(chunks.host_send(k), chunks.host_recv(k), chunks.elems(k)));
    PLX_CHECK(copies.start_copy_out(k));
  }
  // Copies out not waited for in the loop: the last min(n, depth) chunks.
  for (size_t k = n > kStagingDepth ? n - kStagingDepth : 0; k < n; ++k) {
    PLX_CHECK(copies.wait_copy_out(k));
  }
  drain.dismiss();
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::device
