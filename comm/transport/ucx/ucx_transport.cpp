// ucx_transport.cpp - Transport over UCX tagged messages (see ucx_transport.h).
#include "comm/transport/ucx/ucx_transport.h"

#include <fmt/format.h>
#include <sched.h>
#include <ucp/api/ucp.h>

#include <algorithm>
#include <thread>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/transport/ucx/ucx_context.h"
#include "comm/transport/ucx/ucx_endpoints.h"
#include "comm/transport/ucx/ucx_util.h"

namespace plexus::comm::ucx {

using Clock = std::chrono::steady_clock;

namespace {

// Longest sleep of an idle wait: abort, liveness and the timeout are checked at least this often.
constexpr int kIdleWaitMs = 10;
// Bounds on closing the endpoints in the destructor.
constexpr auto kGracefulCloseBound = std::chrono::milliseconds(5000);
constexpr auto kForcedCloseBound = std::chrono::milliseconds(1000);
// Bound on the progress passes that collect cancelled operations after the endpoints closed.
constexpr auto kDrainBound = std::chrono::milliseconds(100);

const char* direction(bool is_send) { return is_send ? "send to" : "receive from"; }

}  // namespace

// The C callbacks UCX calls from inside ucp_worker_progress (or ucp_request_cancel).
struct UcxCallbacks {
  static void send_done(void* request, ucs_status_t status, void* user_data) {
    auto* op = static_cast<Operation*>(user_data);
    op->owner->complete(op, request, status);
  }
  static void recv_done(void* request, ucs_status_t status, const ucp_tag_recv_info_t* /*info*/,
                        void* user_data) {
    auto* op = static_cast<Operation*>(user_data);
    op->owner->complete(op, request, status);
  }
};

plx_result_t UcxTransport::open(int rank, int size, int timeout_ms,
                                std::shared_ptr<AsyncState> async,
                                std::unique_ptr<UcxTransport>* out, bool loopback_only) {
  if (size < 1 || size > kMaxRanks) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("UcxTransport::open: rank {}: size {} not in 1..{} (the UCX wire "
                                 "tag holds the sender's rank in {} bits)",
                                 rank, size, kMaxRanks, kRankBits));
  }
  if (rank < 0 || rank >= size) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("UcxTransport::open: rank {} not in 0..{}", rank, size - 1));
  }
  if (!async) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("UcxTransport::open: rank {}: async state is null", rank));
  }
  int spin_us = 0;  // read before any resource is made: a malformed value fails with nothing open
  PLX_CHECK(config_spin_us(&spin_us));
  std::unique_ptr<UcxTransport> transport(new UcxTransport());
  transport->rank_ = rank;
  transport->size_ = size;
  transport->timeout_ = std::chrono::milliseconds(timeout_ms);
  transport->spin_ = std::chrono::microseconds(spin_us);
  transport->loopback_only_ = loopback_only;
  transport->async_ = async;
  transport->wait_.setup(rank, transport->timeout_, std::move(async));
  PLX_CHECK(UcxContext::open(rank, loopback_only, &transport->context_));
  const std::string& defaults = transport->context_->defaults_applied();
  log_message(LogLevel::Info, "transport ucx open: worker address {} bytes, {}",
              transport->context_->address().size(),
              defaults.empty() ? std::string("UCX settings as given") : "Plexus set " + defaults);
  *out = std::move(transport);
  return PLX_SUCCESS;
}

UcxTransport::~UcxTransport() {
  if (!context_) return;
  const bool broken =
      wait_.failed() || async_->aborted() || async_->error() != PLX_SUCCESS;
  const std::vector<Operation*> live = operations_.live();
  if (!live.empty() && !broken) {
    log_message(LogLevel::Warn, "UCX transport closed with {} operations in flight; cancelling",
                live.size());
  }
  // The callers' Requests may be gone: from here on a completion touches only the Operation.
  for (Operation* op : live) op->req = nullptr;
  for (Operation* op : live) {
    if (op->in_use && op->ucx_request) ucp_request_cancel(context_->worker(), op->ucx_request);
  }
  if (endpoints_) {
    const auto bound =
        broken ? kForcedCloseBound : std::min<Clock::duration>(timeout_, kGracefulCloseBound);
    const size_t unfinished = endpoints_->close_all(broken, Clock::now() + bound);
    if (unfinished > 0 && !broken) {
      log_message(LogLevel::Warn, "{} UCX endpoints did not finish closing in {} ms", unfinished,
                  std::chrono::duration_cast<std::chrono::milliseconds>(bound).count());
    }
    endpoints_.reset();
  }
  const auto drain_until = Clock::now() + kDrainBound;
  while (operations_.in_use() > 0 && Clock::now() < drain_until) {
    if (context_->progress() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  context_.reset();  // destroys the worker (and what UCX still holds) and the context
}

const std::vector<uint8_t>& UcxTransport::local_address() const { return context_->address(); }

plx_result_t UcxTransport::connect(const std::vector<std::vector<uint8_t>>& addresses) {
  if (wait_.failed()) return wait_.sticky_failure();
  if (connected_) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("rank {}: connect called twice", rank_));
  }
  if (addresses.size() != static_cast<size_t>(size_)) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("rank {}: {} addresses for {} ranks", rank_,
                                                     addresses.size(), size_));
  }
  PLX_CHECK(UcxEndpoints::create(
      *context_, rank_, addresses,
      [this](int peer, ucs_status_t status) { peer_failed(peer, status); }, &endpoints_));
  connected_ = true;
  const std::string transports = endpoints_->transports((rank_ + 1) % size_);
  if (!transports.empty()) name_ = "ucx;" + transports;
  log_message(LogLevel::Info, "transport {} connected to {} ranks", name_, size_);
  return PLX_SUCCESS;
}

plx_result_t UcxTransport::open_sibling(int rank, int size, int timeout_ms,
                                        std::shared_ptr<AsyncState> async,
                                        std::unique_ptr<Transport>* out) const {
  std::unique_ptr<UcxTransport> sibling;
  PLX_CHECK(open(rank, size, timeout_ms, std::move(async), &sibling, loopback_only_));
  *out = std::move(sibling);
  return PLX_SUCCESS;
}

plx_result_t UcxTransport::post_send(int peer, uint64_t tag, const void* buf, size_t bytes,
                                     Request& req) {
  return post(true, peer, tag, const_cast<void*>(buf), bytes, req);
}

plx_result_t UcxTransport::post_recv(int peer, uint64_t tag, void* buf, size_t bytes,
                                     Request& req) {
  return post(false, peer, tag, buf, bytes, req);
}

plx_result_t UcxTransport::post(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes,
                                Request& req) {
  const char* what = is_send ? "post_send" : "post_recv";
  if (wait_.failed()) return wait_.sticky_failure();
  if (wait_.async_failed()) return wait_.check_async(what);
  if (!connected_) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("rank {}: {} before connect", rank_, what));
  }
  if (peer < 0 || peer >= size_) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("rank {}: {}: peer {} not in 0..{}",
                                                             rank_, what, peer, size_ - 1));
  }
  if ((tag & ~kUserTagMask) != 0) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("rank {}: {}: tag {:#x} uses bits {}..63, which carry the "
                                 "sender's rank on UCX",
                                 rank_, what, tag, kTagUserBits));
  }
  static unsigned char empty_buffer[1];
  if (!buf) buf = empty_buffer;  // zero-byte messages still need a valid address
  req.done = false;
  req.result = PLX_SUCCESS;
  req.peer = peer;
  req.bytes = bytes;
  log_message(LogLevel::Trace, "{} peer {} tag {:#x} {} bytes", what, peer, tag, bytes);

  Operation* op = operations_.acquire();
  op->owner = this;
  op->req = &req;
  op->is_send = is_send;
  op->peer = peer;
  op->tag = tag;
  op->bytes = bytes;
  op->posting = true;
  ucp_request_param_t params = {};
  params.op_attr_mask =
      UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
  params.datatype = ucp_dt_make_contig(1);
  params.user_data = op;
  ucs_status_ptr_t status;
  if (is_send) {
    params.cb.send = &UcxCallbacks::send_done;
    status =
        ucp_tag_send_nbx(endpoints_->ep_for_send(peer), buf, bytes, wire_tag(rank_, tag), &params);
  } else {
    params.cb.recv = &UcxCallbacks::recv_done;
    status = ucp_tag_recv_nbx(context_->worker(), buf, bytes, wire_tag(peer, tag), kFullTagMask,
                              &params);
  }
  op->posting = false;
  if (status == nullptr) {  // completed at once (UCS_OK); UCX calls no callback then
    operations_.release(op);
    req.done = true;
    ++completions_;
    return PLX_SUCCESS;
  }
  if (UCS_PTR_IS_ERR(status)) {
    operations_.release(op);
    req.result = PLX_ERROR_TRANSPORT;
    req.done = true;
    ucx_error(
        rank_, is_send ? "ucp_tag_send_nbx" : "ucp_tag_recv_nbx", UCS_PTR_STATUS(status),
        fmt::format("{} bytes {} rank {}, tag {:#x}", bytes, is_send ? "to" : "from", peer, tag));
    return wait_.fail_after_grace(PLX_ERROR_TRANSPORT, last_error());
  }
  if (op->req == nullptr) {
    // The callback already ran inside the call (and freed UCX's request).
    operations_.release(op);
  } else {
    op->ucx_request = status;
  }
  if (pending_code_ != PLX_SUCCESS) {
    return wait_.fail_after_grace(pending_code_, pending_message_);
  }
  return PLX_SUCCESS;
}

void UcxTransport::complete(Operation* op, void* ucx_request, int status_code) {
  const auto status = static_cast<ucs_status_t>(status_code);
  if (ucx_request) ucp_request_free(ucx_request);
  op->ucx_request = nullptr;
  if (Request* req = op->req) {
    req->done = true;
    if (status == UCS_OK) {
      ++completions_;
      log_message(LogLevel::Trace, "{} rank {} complete ({} bytes)", direction(op->is_send),
                  op->peer, op->bytes);
    } else {
      req->result = PLX_ERROR_TRANSPORT;
      const std::string hint =
          status == UCS_ERR_MESSAGE_TRUNCATED
              ? fmt::format(" (the message is longer than the {}-byte buffer)", op->bytes)
              : std::string();
      record_pending(PLX_ERROR_TRANSPORT,
                     fmt::format("rank {}: {} rank {} (tag {:#x}, {} bytes) failed: {} ({}){}",
                                 rank_, direction(op->is_send), op->peer, op->tag, op->bytes,
                                 ucs_status_string(status), status_code, hint));
    }
  }
  op->req = nullptr;
  if (!op->posting) operations_.release(op);
}

void UcxTransport::peer_failed(int peer, int status_code) {
  if (shutting_down_) {
    // A peer that finished the communicator's last barrier first has closed its endpoint.
    log_message(LogLevel::Info, "rank {}: rank {} closed its UCX endpoint during shutdown: {}",
                rank_, peer, ucs_status_string(static_cast<ucs_status_t>(status_code)));
    return;
  }
  record_pending(
      PLX_ERROR_REMOTE,
      fmt::format("rank {}: the UCX endpoint to rank {} failed: {} (the peer died or "
                  "its connection broke)",
                  rank_, peer, ucs_status_string(static_cast<ucs_status_t>(status_code))));
}

void UcxTransport::record_pending(plx_result_t code, std::string message) {
  if (pending_code_ != PLX_SUCCESS) return;
  pending_code_ = code;
  pending_message_ = std::move(message);
}

plx_result_t UcxTransport::progress(size_t* completed, bool may_wait) {
  const size_t before = completions_;
  context_->progress();
  *completed = completions_ - before;
  if (pending_code_ == PLX_SUCCESS) return PLX_SUCCESS;
  return may_wait ? wait_.fail_after_grace(pending_code_, pending_message_)
                  : wait_.fail(pending_code_, pending_message_);
}

plx_result_t UcxTransport::wait_all(Request* const* reqs, size_t n) {
  return wait_.wait_all(
      reqs, n, [this](size_t* completed) { return progress(completed); },
      [this](Clock::duration idle) -> plx_result_t {
        if (idle < spin_) {  // PLEXUS_SPIN_US: poll again first, giving way to other ranks
          sched_yield();
          return PLX_SUCCESS;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(timeout_ - idle);
        const int wait_ms =
            static_cast<int>(std::clamp<int64_t>(left.count() + 1, 1, kIdleWaitMs));
        if (const plx_result_t result = context_->wait_for_events(wait_ms);
            result != PLX_SUCCESS) {
          return wait_.fail(result, last_error());
        }
        return PLX_SUCCESS;
      });
}

plx_result_t UcxTransport::test(Request& req, bool* done) {
  return wait_.test(req, done, [this](size_t* completed) { return progress(completed); });
}

void UcxTransport::poll_once() {
  if (wait_.failed() || !context_) return;
  size_t completed = 0;
  // No liveness grace here: a peer that finished plx_comm_destroy first closes its endpoints
  // while this rank still polls, and poll_once must not block.
  (void)progress(&completed, /*may_wait=*/false);
}

}  // namespace plexus::comm::ucx
