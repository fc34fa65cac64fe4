// ucx_transport.h - the Transport over UCX tagged messages (UCP), the alternative to libfabric.
//
// One UcxTransport per communicator: its own UCP context, worker and endpoints, so tags never
// cross communicators. Sends and receives map to ucp_tag_send_nbx / ucp_tag_recv_nbx. UCX tags
// carry no source, so the wire tag is (sender's rank << 45) | tag (ucx_util.h) and a receive
// matches all 64 bits, which makes it directed; tags from the layers above must leave bits 45..63
// clear, and at most 2^19 ranks fit. A message of any size goes in one post (UCX switches to its
// rendezvous protocol for large ones).
//
// Progress is manual, and idle waiting blocks: wait_all() drives ucp_worker_progress and, when no
// request completed, arms the worker and sleeps in poll() on its event fd for at most 10 ms, so
// each pass still checks the abort flag, the liveness state (AsyncState) and PLEXUS_TIMEOUT_MS.
// The first failure (a failed operation such as a message longer than its receive buffer:
// PLX_ERROR_TRANSPORT; a failed endpoint; abort; timeout) is sticky: the transport stops driving
// UCX and every later call returns the same error. Completions reach the caller's Request through
// a record the transport owns (operation_pool.h), so Request::opaque is unused and a Request
// abandoned after a failure is never touched again.
//
// Peer failure: endpoints use UCP_ERR_HANDLING_MODE_PEER; when one fails (its peer died, the
// connection broke) the transport fails with PLX_ERROR_REMOTE naming the peer, after giving the
// liveness channel up to a second to name the lost rank itself (as OfiTransport does; not in
// poll_once(), which never blocks).
//
// UCX settings. UCX reads its own UCX_* variables; Plexus sets one default, and only when the
// user has not set the variable:
//   UCX_NET_DEVICES=lo   when open() is told every rank runs on this host (loopback_only), so
//                        TCP traffic stays on the loopback interface.
// UCX needs nothing else to work in a plain container. With UCX 1.13, peer-failure handling
// exists only on TCP (self, posix, sysv and cma refuse UCP_ERR_HANDLING_MODE_PEER), so every
// message, even to the rank itself, goes over TCP; name() reports it ("ucx;tcp"). A UCX_TLS
// without tcp therefore fails in connect() with a message saying so.
//
// Thread safety: one thread at a time (the worker is UCS_THREAD_MODE_SERIALIZED); the destructor
// may run on another thread than the calls.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/base/async_state.h"
#include "comm/transport/request_wait.h"
#include "comm/transport/transport.h"
#include "comm/transport/ucx/operation_pool.h"

namespace plexus::comm::ucx {

class UcxContext;
class UcxEndpoints;

class UcxTransport final : public Transport {
 public:
  // Creates the UCP context and worker for `rank` of `size`. loopback_only: every rank runs on
  // this host (keeps TCP on "lo" unless UCX_NET_DEVICES is set). Returns
  // PLX_ERROR_INVALID_ARGUMENT when size is not in 1..2^19 or rank not in 0..size-1 or async is
  // null, PLX_ERROR_TRANSPORT when UCX fails (message carries the UCX status text).
  static plx_result_t open(int rank, int size, int timeout_ms, std::shared_ptr<AsyncState> async,
                           std::unique_ptr<UcxTransport>* out, bool loopback_only = false);
  // Cancels what is still posted and closes the endpoints: gracefully (flushing, bounded by
  // PLEXUS_TIMEOUT_MS and 5 s) when healthy, by force (bounded by 1 s) after a failure, an abort
  // or a lost peer. Never hangs. Requests still posted are never touched again.
  ~UcxTransport() override;

  // This worker's address, for the rendezvous.
  const std::vector<uint8_t>& local_address() const override;
  // Creates an endpoint to every rank (index = rank, itself included); required before the
  // first post. PLX_ERROR_INTERNAL if addresses.size() != size() or it is called twice.
  plx_result_t connect(const std::vector<std::vector<uint8_t>>& addresses) override;
  // A new UcxTransport (its own context and worker) with this one's settings (loopback_only).
  plx_result_t open_sibling(int rank, int size, int timeout_ms, std::shared_ptr<AsyncState> async,
                            std::unique_ptr<Transport>* out) const override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  // "ucx" until connect(); then "ucx;<UCT transports to the next rank>", e.g. "ucx;tcp" (so a
  // pointer taken before connect() does not survive it; copy the string).
  const char* name() const override { return name_.c_str(); }

  plx_result_t post_send(int peer, uint64_t tag, const void* buf, size_t bytes,
                         Request& req) override;
  plx_result_t post_recv(int peer, uint64_t tag, void* buf, size_t bytes, Request& req) override;
  plx_result_t wait_all(Request* const* reqs, size_t n) override;
  plx_result_t test(Request& req, bool* done) override;

  // One progress pass with nothing to wait for (plx_comm_destroy calls it while the other ranks
  // finish). Does nothing once the transport has failed. Never blocks.
  void poll_once() override;
  void begin_shutdown() override { shutting_down_ = true; }

 private:
  friend struct UcxCallbacks;
  UcxTransport() = default;

  plx_result_t post(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes, Request& req);
  // Drives UCX until it has nothing more to do; *completed counts finished requests. Returns the
  // failure a callback recorded, if any (may_wait: after the liveness grace,
  // RequestWait::fail_after_grace).
  plx_result_t progress(size_t* completed, bool may_wait = true);
  // From UCX callbacks (inside progress): an operation finished with `status` (a ucs_status_t).
  void complete(Operation* op, void* ucx_request, int status);
  // From the endpoint error handler (inside progress).
  void peer_failed(int peer, int status);
  // Keeps the first failure seen inside progress, for progress() to act on.
  void record_pending(plx_result_t code, std::string message);

  int rank_ = 0;
  int size_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::chrono::microseconds spin_{200};  // PLEXUS_SPIN_US: yield-polling before blocking
  bool loopback_only_ = false;
  std::shared_ptr<AsyncState> async_;
  std::string name_ = "ucx";
  // Declared in creation order; the destructor closes the endpoints before the worker goes.
  std::unique_ptr<UcxContext> context_;
  std::unique_ptr<UcxEndpoints> endpoints_;
  OperationPool operations_;
  bool connected_ = false;
  size_t completions_ = 0;  // requests completed successfully, ever
  bool shutting_down_ = false;  // begin_shutdown(): peers closing are not failures
  plx_result_t pending_code_ = PLX_SUCCESS;
  std::string pending_message_;
  // The sticky failure (fail; fail_after_grace for what UCX reported, a failed operation or
  // endpoint, which may hide a lost peer), the abort and liveness checks, the wait and test loops.
  RequestWait wait_;
};

}  // namespace plexus::comm::ucx
