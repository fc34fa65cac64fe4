// request_wait.cpp - see request_wait.h.
#include "comm/transport/request_wait.h"

#include <fmt/format.h>

#include <thread>
#include <utility>

#include "comm/base/error.h"
#include "comm/base/log.h"

namespace plexus::comm {

void RequestWait::setup(int rank, std::chrono::milliseconds timeout,
                        std::shared_ptr<AsyncState> async) {
  rank_ = rank;
  timeout_ = timeout;
  async_ = std::move(async);
}

plx_result_t RequestWait::sticky_failure() const { return set_error(failure_, failure_message_); }

plx_result_t RequestWait::fail(plx_result_t code, std::string message) {
  if (failure_ != PLX_SUCCESS) return sticky_failure();
  failure_ = code;
  failure_message_ = std::move(message);
  log_message(LogLevel::Info, "transport failed: {}", failure_message_);
  return set_error(failure_, failure_message_);
}

plx_result_t RequestWait::fail_after_grace(plx_result_t code, std::string message) {
  if (failure_ != PLX_SUCCESS) return sticky_failure();
  // A peer that died usually shows up here first; give the liveness channel a moment to say
  // which rank it was, since that is the actionable news.
  const auto until = Clock::now() + kLivenessGrace;
  while (async_->error() == PLX_SUCCESS && !async_->aborted() && Clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (async_->error() != PLX_SUCCESS) {
    code = async_->error();
    message = fmt::format("rank {}: {} (transport: {})", rank_, async_->message(), message);
  }
  return fail(code, std::move(message));
}

plx_result_t RequestWait::check_async(std::string_view during) {
  if (async_->aborted()) {
    return fail(
        PLX_ERROR_ABORTED,
        fmt::format("rank {}: {}: the communicator was aborted (plx_comm_abort)", rank_, during));
  }
  if (const plx_result_t code = async_->error(); code != PLX_SUCCESS) {
    return fail(code, fmt::format("rank {}: {}: {}", rank_, during, async_->message()));
  }
  return PLX_SUCCESS;
}

plx_result_t RequestWait::wait_all(Request* const* reqs, size_t n, const Progress& progress,
                                   const Idle& idle) {
  if (failure_ != PLX_SUCCESS) return sticky_failure();
  auto last_progress = Clock::now();
  while (true) {
    size_t completed = 0;
    PLX_CHECK(progress(&completed));
    size_t pending = 0;
    const Request* first = nullptr;
    for (size_t i = 0; i < n; ++i) {
      if (reqs[i] && !reqs[i]->done) {
        if (!first) first = reqs[i];
        ++pending;
      }
    }
    if (pending == 0) return PLX_SUCCESS;
    const auto describe = [&] {
      return fmt::format("waiting for {} of {} requests (first: with rank {}, {} bytes)", pending,
                         n, first->peer, first->bytes);
    };
    if (async_failed()) return check_async(describe());
    const auto now = Clock::now();
    if (completed > 0) {
      last_progress = now;
      continue;
    }
    if (now - last_progress > timeout_) {
      return fail(PLX_ERROR_TIMEOUT,
                  fmt::format("rank {}: {}: no progress for PLEXUS_TIMEOUT_MS={} ms", rank_,
                              describe(), timeout_.count()));
    }
    PLX_CHECK(idle(now - last_progress));
  }
}

plx_result_t RequestWait::test(Request& req, bool* done, const Progress& progress) {
  if (failure_ != PLX_SUCCESS) return sticky_failure();
  size_t completed = 0;
  PLX_CHECK(progress(&completed));
  PLX_CHECK(check_async("testing a request"));
  *done = req.done;
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
