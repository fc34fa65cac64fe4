// request_wait.h - what the message transports (ofi/, ucx/) share around their requests: the
// first failure, kept and returned again by every later call (sticky); the liveness grace
// before an error that may hide a lost peer is reported; the abort and liveness check; and the
// loops of Transport::wait_all and Transport::test over the transport's own progress.
//
// One per transport, used by the thread that drives it (as the Transport itself).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "comm/base/async_state.h"
#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

class RequestWait {
 public:
  using Clock = std::chrono::steady_clock;
  // How long an error that may hide a lost peer waits for the liveness channel to name it.
  static constexpr auto kLivenessGrace = std::chrono::milliseconds(1000);

  // Set once, when the transport opens: its rank (for messages), PLEXUS_TIMEOUT_MS and the
  // communicator's abort and liveness state.
  void setup(int rank, std::chrono::milliseconds timeout, std::shared_ptr<AsyncState> async);

  bool failed() const { return failure_ != PLX_SUCCESS; }
  // The first failure again (set_error with its code and message).
  plx_result_t sticky_failure() const;
  // Records the first failure, logs it and returns it; later calls return the first one.
  plx_result_t fail(plx_result_t code, std::string message);
  // fail() for an error the transport saw (a reset connection, a failed operation or
  // endpoint), which may hide a lost peer: first waits up to kLivenessGrace for the liveness
  // channel to name the rank, and reports its news, with the transport's message after it.
  plx_result_t fail_after_grace(plx_result_t code, std::string message);

  // Whether plx_comm_abort or the liveness channel has news.
  bool async_failed() const { return async_->aborted() || async_->error() != PLX_SUCCESS; }
  // On such news, fails the transport with it (PLX_ERROR_ABORTED, or the liveness channel's
  // code), the message naming what was `during`; else PLX_SUCCESS.
  plx_result_t check_async(std::string_view during);

  // One pass of the transport's progress: *completed counts the operations it finished.
  using Progress = std::function<plx_result_t(size_t* completed)>;
  // Nothing completed for `idle` (less than the timeout): back off (yield, sleep, or block for
  // the transport's events) and return, or fail.
  using Idle = std::function<plx_result_t(Clock::duration idle)>;
  // Transport::wait_all: progress until every non-NULL request is done, failing on abort,
  // liveness news, or PLEXUS_TIMEOUT_MS without progress.
  plx_result_t wait_all(Request* const* reqs, size_t n, const Progress& progress,
                        const Idle& idle);
  // Transport::test: one progress pass, the abort and liveness check, then *done.
  plx_result_t test(Request& req, bool* done, const Progress& progress);

 private:
  int rank_ = 0;
  std::chrono::milliseconds timeout_{0};
  std::shared_ptr<AsyncState> async_;
  plx_result_t failure_ = PLX_SUCCESS;
  std::string failure_message_;
};

}  // namespace plexus::comm
