// ucx_context.h - one UCP context and its one worker: UCX's configuration with Plexus's
// defaults, the worker address the rendezvous publishes, progress, and the blocking idle wait.
//
// The context asks for tagged messages and wakeup (UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP); the
// worker is UCS_THREAD_MODE_SERIALIZED (one thread at a time, not always the same one:
// plx_comm_abort may destroy the transport from another thread). Idle waiting arms the worker and
// polls its event file descriptor, so a rank with nothing to do sleeps in the kernel.
#pragma once

#include <ucp/api/ucp.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::comm::ucx {

class UcxContext {
 public:
  // Reads UCX's configuration (its UCX_* variables), fills in Plexus's defaults for variables the
  // user left unset (loopback_only: UCX_NET_DEVICES=lo, for jobs whose ranks all run on this
  // host), then creates the context and the worker and reads the worker's address.
  static plx_result_t open(int rank, bool loopback_only, std::unique_ptr<UcxContext>* out);
  // Destroys the worker (and with it any endpoint still open), then the context.
  ~UcxContext();

  UcxContext(const UcxContext&) = delete;
  UcxContext& operator=(const UcxContext&) = delete;

  ucp_worker_h worker() const { return worker_; }
  // The worker's address, for the rendezvous (opaque bytes, a few hundred).
  const std::vector<uint8_t>& address() const { return address_; }
  // The UCX settings Plexus chose ("UCX_NET_DEVICES=lo"), or "" when it chose none.
  const std::string& defaults_applied() const { return defaults_applied_; }

  // Calls ucp_worker_progress until it reports no more events (at most a bounded number of
  // passes, so a busy worker cannot starve the caller's checks). Returns the events seen.
  unsigned progress();
  // Sleeps until the worker has an event or timeout_ms passes. Returns at once when events are
  // pending (ucp_worker_arm says busy): the caller progresses and decides again. Fails with
  // PLX_ERROR_TRANSPORT if arming fails, PLX_ERROR_SYSTEM if poll() does.
  plx_result_t wait_for_events(int timeout_ms);

 private:
  UcxContext() = default;

  int rank_ = 0;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  int event_fd_ = -1;
  std::vector<uint8_t> address_;
  std::string defaults_applied_;
};

}  // namespace plexus::comm::ucx
