// ucx_endpoints.h - one UCP endpoint per rank (itself included), created from the worker
// addresses the rendezvous gathered, with peer-failure handling, and their bounded close.
//
// Endpoints use UCP_ERR_HANDLING_MODE_PEER: when a peer dies or its connection breaks, UCX fails
// that endpoint's operations and calls the error handler, which passes (peer, status) on. Note
// that UCX 1.13 offers no shared-memory transport (self, posix, sysv) that handles peer failure,
// so with this mode it connects over TCP, even to the rank itself.
#pragma once

#include <ucp/api/ucp.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport/ucx/ucx_context.h"
#include "plexus/plexus.h"

namespace plexus::comm::ucx {

class UcxEndpoints {
 public:
  // Called from inside progress when the endpoint to `peer` fails.
  using ErrorHandler = std::function<void(int peer, ucs_status_t status)>;

  // Creates an endpoint to every rank (index = rank). On failure, the message names the rank
  // whose address could not be reached.
  static plx_result_t create(UcxContext& context, int rank,
                             const std::vector<std::vector<uint8_t>>& addresses,
                             ErrorHandler on_error, std::unique_ptr<UcxEndpoints>* out);
  // Closes what close_all() has not (forcibly, with a short bound).
  ~UcxEndpoints();

  UcxEndpoints(const UcxEndpoints&) = delete;
  UcxEndpoints& operator=(const UcxEndpoints&) = delete;

  // The endpoint to `peer`, for a send (which marks it as one with something to flush).
  ucp_ep_h ep_for_send(int peer) {
    sent_[peer] = true;
    return eps_[peer];
  }
  bool failed(int peer) const { return failed_[peer]; }

  // Closes every endpoint and drives progress until the closes complete or `deadline` passes.
  // A graceful close flushes the endpoint's sends first, which needs the peer to progress too
  // (in plx_comm_destroy every rank closes at the same time). `force` (after a failure or an
  // abort) releases the endpoints at once, completing their operations with UCS_ERR_CANCELED.
  // Endpoints that failed, or never carried a send (nothing to flush; the flush would only open
  // a connection to a peer that may be gone), are always closed by force. Returns how many
  // closes did not complete.
  size_t close_all(bool force, std::chrono::steady_clock::time_point deadline);

  // The UCT transports of the lanes UCX chose to reach `peer`, e.g. "tcp" ("" if unknown).
  std::string transports(int peer) const;

 private:
  struct Slot {
    UcxEndpoints* owner = nullptr;
    int peer = -1;
  };
  UcxEndpoints() = default;
  static void on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  UcxContext* context_ = nullptr;
  int rank_ = 0;
  ErrorHandler on_error_;
  std::vector<ucp_ep_h> eps_;
  std::vector<bool> failed_;
  std::vector<bool> sent_;
  // The error handler's argument for each endpoint; allocated once, never moves.
  std::unique_ptr<Slot[]> slots_;
};

}  // namespace plexus::comm::ucx
