// staged_pipeline.h - the schedule of a pipelined staged call (issue 6: "pipelined staging through
// pinned host buffers"): a large call on device buffers cut into chunks, each chunk copied into
// a ring of pinned host slots, reduced or moved by the host collective, and copied back, with
// the copies of the neighbouring chunks overlapping the host work.
//
// Three chunks move at once, one per stage:
//
//   time ->          step k-1        step k          step k+1
//   copy in   (D2H)  chunk k         chunk k+1       chunk k+2     second stream
//   host run         chunk k-1       chunk k         chunk k+1     this thread
//   copy out  (H2D)  chunk k-2       chunk k-1       chunk k       the caller's stream
//
// Step k: wait until chunk k-2 has left its slot (copy out done), start copying chunk k+1 in,
// wait for chunk k's copy in, run the host collective on chunk k, start copying chunk k out.
// After the last step every copy out is waited for, so the result is in place on return.
// Chunk k uses ring slot k % kStagingDepth; a slot holds a send area and a receive area of one
// chunk each (one area when the call is in place), so the pinned memory is
// kStagingDepth x 2 chunks whatever the message size.
//
// Every rank must make the same host calls in the same order: the chunk boundaries come only
// from the call's count, its element size and PLEXUS_CHUNK_BYTES, which agree on every rank.
//
// The schedule is written against ChunkCopies, so that it runs on CUDA (staged_collective.cpp:
// cudaMemcpyAsync and events) and in a CPU test (memcpy on a helper thread).
#pragma once

#include <cstddef>

#include "comm/device/device_collective.h"
#include "plexus/plexus.h"

namespace plexus::comm::device {

// Ring slots: one being copied in, one on the host, one being copied out.
constexpr size_t kStagingDepth = 3;
// Where each area in the ring starts (and where a chunk's bytes are rounded up to).
constexpr size_t kStagingAlign = 256;
// The chunk of the pipeline is PLEXUS_CHUNK_BYTES clamped to this range (and rounded down to
// whole elements): at most 6 x 16 MiB of pinned memory per communicator, and no chunk so small
// that per-call costs dominate.
constexpr size_t kMinStagingChunkBytes = size_t{64} << 10;
constexpr size_t kMaxStagingChunkBytes = size_t{16} << 20;

// Elements per chunk for a call of `elem_bytes`-sized elements on a communicator with
// `chunk_bytes` (plx_comm::chunk_bytes): at least one.
size_t staging_chunk_elems(size_t elem_bytes, size_t chunk_bytes);

// Whether a staged call is pipelined: it has a range run (the element-wise calls: allreduce,
// reduce, broadcast, send, recv), more than two chunks of elements, every buffer this rank uses
// holds the call's `count` elements, and sendbuf and recvbuf are the same or disjoint. The
// first two depend only on the call (the same on every rank); the others hold on every rank
// whose arguments passed the host checks.
bool pipelined(const DeviceArgs& args, size_t count, size_t chunk_bytes);

// One pipelined call: the caller's buffers, the chunks and the ring. A side this rank does not
// use (reduce's recvbuf off the root, broadcast's sendbuf off the root, send's recvbuf, recv's
// sendbuf) is not staged: the host run gets the caller's pointer for it, unchanged.
struct StagedChunks {
  size_t count = 0;        // elements of the call
  size_t elem_bytes = 0;   // bytes of one element
  size_t chunk_elems = 1;  // elements of every chunk but the last
  const void* send = nullptr;  // the caller's sendbuf
  void* recv = nullptr;        // the caller's recvbuf
  bool stage_send = false;     // this rank reads sendbuf
  bool stage_recv = false;     // this rank writes recvbuf
  unsigned char* ring = nullptr;  // ring_bytes() of pinned memory

  // sendbuf == recvbuf, both staged: one area per slot, so the host call is in place too.
  bool in_place() const { return stage_send && stage_recv && send == recv; }
  // Chunks of the call: ceil(count / chunk_elems), and one (empty) chunk for count 0, so that
  // a call is always one host call at least.
  size_t chunks() const;
  size_t first(size_t k) const { return k * chunk_elems; }
  size_t elems(size_t k) const;
  size_t bytes(size_t k) const { return elems(k) * elem_bytes; }
  // Bytes of one area (a chunk rounded up to kStagingAlign) and of the whole ring.
  size_t area_bytes() const;
  size_t ring_bytes() const;
  // Chunk k in the caller's buffers (only for a staged side).
  const unsigned char* device_send(size_t k) const;
  unsigned char* device_recv(size_t k) const;
  // Chunk k's areas in the ring (only for a staged side).
  unsigned char* staged_send(size_t k) const;
  unsigned char* staged_recv(size_t k) const;
  // What the host run of chunk k gets: the staged area, or the caller's pointer.
  const void* host_send(size_t k) const;
  void* host_recv(size_t k) const;
};

// The copies of one pipelined call. Each start_* queues one copy of chunk k between the
// caller's buffer and its ring slot and returns; the matching wait_* blocks until it is done and
// returns its error (an asynchronous failure shows there). A side the call does not stage needs
// no copy: its start and wait return PLX_SUCCESS at once. cancel() is called after a failure:
// it waits for every copy already queued (ignoring their errors) and leaves nothing queued.
class ChunkCopies {
 public:
  virtual ~ChunkCopies() = default;
  virtual plx_result_t start_copy_in(size_t k) = 0;   // sendbuf chunk k -> staged_send(k)
  virtual plx_result_t wait_copy_in(size_t k) = 0;
  virtual plx_result_t start_copy_out(size_t k) = 0;  // staged_recv(k) -> recvbuf chunk k
  virtual plx_result_t wait_copy_out(size_t k) = 0;
  virtual void cancel() = 0;
};

// Runs the schedule above: the host run once per chunk, in order, with chunk k's host
// pointers (host_send(k), host_recv(k)) and elems(k). The first error, from a copy or from the
// host run, stops it: nothing more is started, cancel() drains what was queued, and that error
// is returned. On success every copy out is complete.
plx_result_t run_staged_pipeline(const StagedChunks& chunks, ChunkCopies& copies,
                                 const HostRangeRun& run);

}  // namespace plexus::comm::device
