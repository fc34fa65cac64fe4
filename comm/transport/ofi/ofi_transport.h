// ofi_transport.h - the Transport over libfabric tagged messages on an RDM endpoint.
//
// One OfiTransport per communicator: its own fabric, domain, completion queue and endpoint, so
// tags never cross communicators. Sends and receives map to fi_tsend / fi_trecv with directed
// receive (FI_DIRECTED_RECV: a receive matches only its peer). A message larger than the
// provider's max_msg_size (or PLEXUS_FI_MAX_MSG_BYTES) is split into up to 256 parts whose tags
// carry the part index in bits 56..63; such a message must be received with exactly its size.
//
// Progress is manual: wait_all() polls the completion queue, and when nothing completes yields
// the CPU (PLEXUS_SPIN_US), then sleeps in steps growing to 1 ms, so many ranks can share few
// cores. The manual-progress providers (tcp;ofi_rxm, udp;ofi_rxd, efa) advance a long message's
// protocol (rendezvous, acknowledgements) only inside fi_cq_read and posts, through round trips
// that complete nothing, so a sleeping rank stalls its own transfer: while the posted operations
// not yet completed total kBusyMinBytes or more, the wait keeps yield-polling for their time at
// kBusyMinRate (sends at most 1 s, receives 50 ms) after the last completion, then sleeps at most
// kBusySleep for kBusyShortSleeps more, then as when idle; wait_hint() tells the executor's
// progress thread the same, for the non-blocking sends and receives it drives. Measured with perf/ofi-progress.sh (docs/performance.md):
// sendrecv of 64 MiB went from ~0.9 to ~2 GB/s over tcp;ofi_rxm on an idle host, as fast as
// forced polling; an idle rank (a barrier's few bytes) waits as before. Each pass checks the
// abort flag and the liveness state (AsyncState). The first failure (a provider error, a lost
// peer, abort, timeout) is sticky: the transport stops touching the provider and every later
// call returns the same error, since the communicator must be rebuilt anyway.
//
// FI_HMEM (ofi_transport_hmem.cpp): when the provider was opened with FI_HMEM (provider_select.h
// asks for it), post_send_hmem / post_recv_hmem register the buffer's memory through a bounded
// RegistrationCache (registration_cache.h) and pass the descriptor to fi_tsend / fi_trecv. A
// failed registration turns hmem_supported() off for that memory space on this transport.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "comm/base/async_state.h"
#include "comm/transport/request_wait.h"
#include "comm/transport/ofi/completion_queue.h"
#include "comm/transport/ofi/endpoint.h"
#include "comm/transport/ofi/fabric.h"
#include "comm/transport/ofi/registration_cache.h"
#include "comm/transport/transport.h"

namespace plexus::comm::ofi {

class OfiTransport final : public Transport {
 public:
  // Opens fabric, domain, completion queue and endpoint for `info` (ownership taken).
  // max_msg_bytes == 0 uses the provider's limit. When `info` is an FI_HMEM entry with another
  // entry chained after it (select_provider) and it fails to open, the next entry is opened.
  static plx_result_t open(InfoPtr info, int rank, int size, int timeout_ms,
                           size_t max_msg_bytes, std::shared_ptr<AsyncState> async,
                           std::unique_ptr<OfiTransport>* out);
  ~OfiTransport() override;

  // This endpoint's address, for the rendezvous.
  const std::vector<uint8_t>& local_address() const override { return endpoint_->name(); }
  // Inserts every rank's address (index = rank); required before the first post.
  plx_result_t connect(const std::vector<std::vector<uint8_t>>& addresses) override;
  // A new endpoint on a copy of this one's fi_info, with the same message-size limit.
  plx_result_t open_sibling(int rank, int size, int timeout_ms, std::shared_ptr<AsyncState> async,
                            std::unique_ptr<Transport>* out) const override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return fabric_->provider_name().c_str(); }
  std::string nic() const override;
  size_t eager_bytes() const override { return eager_bytes_; }

  plx_result_t post_send(int peer, uint64_t tag, const void* buf, size_t bytes,
                         Request& req) override;
  plx_result_t post_recv(int peer, uint64_t tag, void* buf, size_t bytes, Request& req) override;
  plx_result_t wait_all(Request* const* reqs, size_t n) override;
  plx_result_t test(Request& req, bool* done) override;

  // One progress pass with nothing to wait for (plx_comm_destroy calls it while the other
  // ranks finish). Does nothing once the transport has failed. Never blocks.
  void poll_once() override;
  // While kBusyMinBytes or more are posted: poll for their time at kBusyMinRate (at most
  // kBusyMaxPollSends / kBusyMaxPollReceives), sleep at most kBusySleep. Else no opinion.
  WaitHint wait_hint() const override;

  // FI_HMEM (ofi_transport_hmem.cpp; see transport.h).
  bool hmem_supported(MemorySpace space) const override;
  plx_result_t post_send_hmem(int peer, uint64_t tag, const void* buf, size_t bytes,
                              const BufferMemory& memory, Request& req) override;
  plx_result_t post_recv_hmem(int peer, uint64_t tag, void* buf, size_t bytes,
                              const BufferMemory& memory, Request& req) override;
  // Whether the provider was opened with FI_HMEM.
  bool hmem() const { return hmem_; }
  // The registration cache's counters (tests).
  const RegistrationStats& registration_stats() const { return registrations_.stats(); }

 private:
  struct SplitOp;
  OfiTransport() = default;
  // open() for one entry.
  static plx_result_t open_entry(InfoPtr info, int rank, int size, int timeout_ms,
                                 size_t max_msg_bytes, std::shared_ptr<AsyncState> async,
                                 std::unique_ptr<OfiTransport>* out);

  // `desc`: the memory descriptor of buf (fi_mr_desc), or nullptr for unregistered host memory.
  plx_result_t post(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes, Request& req,
                    void* desc = nullptr);
  // Posts one fi_tsend/fi_trecv, retrying FI_EAGAIN with progress until the timeout.
  plx_result_t post_one(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes,
                        void* context, void* desc);
  plx_result_t post_hmem(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes,
                         const BufferMemory& memory, Request& req);
  // A request has completed: the registration its operation held is released.
  void release_registration(Request* req);
  // A wait (wait_all, or a post retrying FI_EAGAIN) that saw no completion for `idle`: yields,
  // or sleeps when idle long enough (see the file comment).
  void idle_backoff(std::chrono::steady_clock::duration idle) const;
  // Reads the completion queue until it is empty; *completed counts finished operations.
  plx_result_t progress(size_t* completed);
  void complete(const Completion& completion);
  // Records the first failure and returns it; later calls return it again. A provider error
  // (PLX_ERROR_TRANSPORT) first gives the liveness channel its grace (request_wait.h).
  plx_result_t fail(plx_result_t code, std::string message);

  int rank_ = 0;
  int size_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::chrono::microseconds spin_{200};  // PLEXUS_SPIN_US: yield-polling before sleeps
  // Bytes of the posted receives [0] and sends [1] not yet completed (a split message counts
  // until its last part completes). At least kBusyMinBytes of them keep a wait polling after
  // the last completion for up to their time at kBusyMinRate bytes/s: the sends' at most
  // kBusyMaxPollSends, the receives' at most kBusyMaxPollReceives (a receive may be posted long
  // before its sender starts: pipeline stages post theirs ahead); then it sleeps in steps of at
  // most kBusySleep for kBusyShortSleeps, then as when idle (idle_backoff, wait_hint).
  static constexpr size_t kBusyMinBytes = 64 * 1024;
  static constexpr double kBusyMinRate = 20e6;
  static constexpr std::chrono::milliseconds kBusyMaxPollSends{1000};
  static constexpr std::chrono::milliseconds kBusyMaxPollReceives{50};
  static constexpr std::chrono::microseconds kBusySleep{100};
  static constexpr std::chrono::seconds kBusyShortSleeps{1};
  // Written by the thread driving the transport; atomic (relaxed) because the executor's
  // progress thread reads them through wait_hint().
  void add_outstanding(bool is_send, size_t posted, size_t completed = 0);
  std::array<std::atomic<size_t>, 2> outstanding_bytes_{};
  size_t max_msg_bytes_ = 0;
  size_t eager_bytes_ = 0;  // eager_limit.h, of the opened provider
  std::shared_ptr<AsyncState> async_;
  std::unique_ptr<Fabric> fabric_;
  std::unique_ptr<CompletionQueue> cq_;
  std::unique_ptr<Endpoint> endpoint_;
  bool connected_ = false;
  // The sticky failure, the abort and liveness checks, and the wait and test loops.
  RequestWait wait_;
  // Contexts of the parts of split messages -> their operation (empty almost always).
  std::unordered_map<void*, SplitOp*> split_parts_;
  std::unordered_map<SplitOp*, std::unique_ptr<SplitOp>> split_ops_;
  // FI_HMEM. Declared after the provider objects, so the registrations close before them.
  bool hmem_ = false;
  std::array<std::atomic<bool>, 2> hmem_failed_{};  // per MemorySpace: a registration failed
  RegistrationCache registrations_{RegistrationCache::kDefaultCapacity, nullptr};
  // Posted operations on registered memory -> the registration they use (empty almost always).
  std::unordered_map<Request*, std::shared_ptr<Registration>> registrations_in_use_;
};

}  // namespace plexus::comm::ofi
