// transport.h - the one small interface every Plexus transport implements.
//
// A transport moves tagged byte messages between the ranks of one communicator. It knows nothing
// of collectives: algorithms in comm/algorithms/ build on post_send/post_recv/wait_all only.
//
// Matching: a receive posted for (peer, tag) matches exactly one send from `peer` with the same
// `tag` on the same transport object (each communicator owns its own transport, so tags never
// cross communicators). Messages of one (peer, tag) pair must be unique; algorithms guarantee it
// by building tags as tag_base | index, where tag_base is unique per collective call and the
// index (bits 0..23) is the algorithm's; comm/transport/tag.h has the whole layout. Bits 45..63
// belong to the transport (libfabric numbers the parts of a split message in 56..63; UCX puts the
// sender's rank in 45..63).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::comm {

class AsyncState;  // comm/base/async_state.h

// One posted send or receive. Must not move or be destroyed while posted (the transport keeps a
// pointer to it until it completes).
struct Request {
  // Transport-private completion context (a libfabric fi_context2 fits here).
  alignas(16) unsigned char opaque[64] = {};
  bool done = false;
  plx_result_t result = PLX_SUCCESS;
  int peer = -1;
  size_t bytes = 0;  // bytes posted (send) or capacity (recv)

  Request() = default;
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

  // Makes a completed (or never posted) request ready to be posted again. A Request cannot be
  // assigned, since it must not move while posted, so it is cleared field by field.
  void reset() {
    for (unsigned char& b : opaque) b = 0;
    done = false;
    result = PLX_SUCCESS;
    peer = -1;
    bytes = 0;
  }
};

// Where a buffer given to post_send_hmem / post_recv_hmem lives (libfabric's FI_HMEM ifaces).
enum class MemorySpace { Host, Cuda };

// A buffer's memory as the registration of post_send_hmem / post_recv_hmem sees it.
struct BufferMemory {
  MemorySpace space = MemorySpace::Host;
  int device = 0;  // CUDA device ordinal (Cuda); 0 for Host
  // The allocation holding the buffer, [base, base + bytes), and an id unique to that allocation
  // in this process (CUDA: CU_POINTER_ATTRIBUTE_BUFFER_ID), so that memory freed and allocated
  // again at the same address is never mistaken for the old one. id != 0: the whole allocation
  // is registered once and the registration reused for every buffer inside it; id == 0: only the
  // buffer is registered, for this one operation.
  const void* base = nullptr;
  size_t bytes = 0;
  uint64_t id = 0;
};

// How a thread that found none of its operations on a transport complete should wait before it
// polls again: yield-poll while it has seen nothing complete for less than `poll_for`, then for
// `short_sleeps_for` more sleep at most `max_sleep` at a time, then back off as usual. The default
// has no opinion; the libfabric transport asks for longer polling and shorter sleeps while a
// large transfer is posted (ofi_transport.h).
struct WaitHint {
  std::chrono::nanoseconds poll_for{0};
  std::chrono::nanoseconds max_sleep = std::chrono::nanoseconds::max();
  std::chrono::nanoseconds short_sleeps_for{0};
};

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Provider name, e.g. "tcp;ofi_rxm" or "shm".
  virtual const char* name() const = 0;
  // The network device this rank's endpoint opened (libfabric's domain name, e.g. "eth1" or
  // "rdmap79s0-rdm"), "" where unknown. Ranks of a host with different names send over
  // different NICs (rails); the cost model counts them (comm/tuning/cost_shape.h).
  virtual std::string nic() const { return ""; }
  // The largest message, in bytes, this transport sends to another host eagerly, without its
  // receiver answering first (ofi/eager_limit.h); 0 where there is no such limit or it is
  // unknown. The hierarchical allreduce's lane step (hierarchical_segments.h) reads it.
  virtual size_t eager_bytes() const { return 0; }

  // Posts a non-blocking tagged send of `bytes` bytes to `peer`. `buf` must stay valid and
  // unchanged until the request completes. bytes == 0 is allowed (a pure signal).
  virtual plx_result_t post_send(int peer, uint64_t tag, const void* buf, size_t bytes,
                                 Request& req) = 0;
  // Posts a non-blocking tagged receive of at most `bytes` bytes from `peer`.
  virtual plx_result_t post_recv(int peer, uint64_t tag, void* buf, size_t bytes,
                                 Request& req) = 0;

  // Drives progress until every request in reqs[0..n) is done. Yields the CPU when idle (never
  // spins hot: 8 ranks on 2 cores must make progress). Returns the first failure: a request's
  // own error, PLX_ERROR_REMOTE when a peer is known lost, PLX_ERROR_ABORTED after abort, or
  // PLX_ERROR_TIMEOUT after PLEXUS_TIMEOUT_MS without completion. On failure, the message
  // (plexus::set_error) names the operation, this rank and the peer.
  virtual plx_result_t wait_all(Request* const* reqs, size_t n) = 0;

  // Makes one progress pass; sets *done when req has completed. Never blocks.
  virtual plx_result_t test(Request& req, bool* done) = 0;

  // ---- Set-up, used by the communicator (not by algorithms) ----
  // This endpoint's address, to be sent to the peers.
  virtual const std::vector<uint8_t>& local_address() const = 0;
  // Records every rank's address (index = rank); required before the first post.
  virtual plx_result_t connect(const std::vector<std::vector<uint8_t>>& addresses) = 0;
  // One progress pass with nothing to wait for. Never blocks; does nothing after a failure.
  virtual void poll_once() = 0;
  // What a waiter should do now (WaitHint). Read by the executor's progress thread between its
  // polls of parked operations; may be called from another thread than the one driving the
  // transport (a racy but harmless read). Default: no opinion.
  virtual WaitHint wait_hint() const { return {}; }
  // The communicator is shutting down: from now on a peer closing its endpoint (it finished
  // first) is not a failure. Lost messages still end in PLX_ERROR_TIMEOUT.
  virtual void begin_shutdown() {}
  // Opens a new, unconnected endpoint of the same kind and settings for a group of `size`
  // ranks in which this process is `rank` (communicator split). `async` is the new group's.
  virtual plx_result_t open_sibling(int rank, int size, int timeout_ms,
                                    std::shared_ptr<AsyncState> async,
                                    std::unique_ptr<Transport>* out) const = 0;

  // ---- Registered memory (libfabric FI_HMEM), optional; used by comm/device for plx_send and
  // plx_recv of device buffers ----
  // Whether post_send_hmem / post_recv_hmem may be tried for memory in `space`: the provider
  // was opened with FI_HMEM (PLEXUS_FI_HMEM=1) and no registration in `space` has failed on this
  // transport. Thread-safe.
  virtual bool hmem_supported(MemorySpace space) const { return false; }
  // post_send / post_recv of a buffer in `memory` (e.g. CUDA device memory): the transport
  // registers the memory with the provider (fi_mr_regattr; the registrations are cached, at most
  // a bounded number, and closed with the transport) and hands the provider its descriptor, so
  // the provider moves device memory itself. The message matches an ordinary post_recv /
  // post_send on the peer. PLX_ERROR_UNSUPPORTED, with nothing posted, when this transport has
  // no FI_HMEM or the registration failed (hmem_supported(space) is false from then on): the
  // caller may stage the buffer through host memory and post it the ordinary way instead.
  virtual plx_result_t post_send_hmem(int peer, uint64_t tag, const void* buf, size_t bytes,
                                      const BufferMemory& memory, Request& req) {
    return PLX_ERROR_UNSUPPORTED;
  }
  virtual plx_result_t post_recv_hmem(int peer, uint64_t tag, void* buf, size_t bytes,
                                      const BufferMemory& memory, Request& req) {
    return PLX_ERROR_UNSUPPORTED;
  }
};

}  // namespace plexus::comm
