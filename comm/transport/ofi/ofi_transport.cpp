// ofi_transport.cpp - Transport over libfabric tagged messages (see ofi_transport.h).
#include "comm/transport/ofi/ofi_transport.h"

#include <fmt/format.h>
#include <rdma/fi_tagged.h>
#include <sched.h>

#include <algorithm>
#include <cstddef>
#include <thread>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/transport/ofi/eager_limit.h"
#include "comm/transport/ofi/provider_select.h"

namespace plexus::comm::ofi {

using Clock = std::chrono::steady_clock;

static_assert(sizeof(fi_context2) <= sizeof(Request::opaque),
              "Request::opaque must hold a fi_context2");
static_assert(offsetof(Request, opaque) == 0, "the context must start the Request");

namespace {

constexpr int kPartShift = 56;
constexpr size_t kMaxParts = 256;

// Sleeps for an idle wait: steps that grow with the time slept so far, 20 us to `longest`.
void sleep_step(Clock::duration slept, Clock::duration longest) {
  using std::chrono::microseconds;
  const auto step = std::clamp<Clock::duration>(slept / 8, microseconds(20), longest);
  std::this_thread::sleep_for(step);
}

}  // namespace

struct OfiTransport::SplitOp {
  Request* req = nullptr;
  size_t remaining = 0;
  std::vector<fi_context2> contexts;  // one per part; never resized after posting starts
};

plx_result_t OfiTransport::open(InfoPtr info, int rank, int size, int timeout_ms,
                                size_t max_msg_bytes, std::shared_ptr<AsyncState> async,
                                std::unique_ptr<OfiTransport>* out) {
  if ((info->caps & FI_HMEM) == 0 || info->next == nullptr) {
    return open_entry(std::move(info), rank, size, timeout_ms, max_msg_bytes, std::move(async),
                      out);
  }
  InfoPtr plain(info->next);  // select_provider's entry without FI_HMEM
  info->next = nullptr;
  if (open_entry(std::move(info), rank, size, timeout_ms, max_msg_bytes, async, out) ==
      PLX_SUCCESS) {
    return PLX_SUCCESS;
  }
  const std::string why = fmt::format("opening its FI_HMEM entry failed: {}", last_error());
  clear_error();
  // A WARN for efa (a NIC without GPUDirect RDMA); the other providers' FI_HMEM entries serve
  // the staging-free path only, so theirs is at INFO.
  report_hmem_refused(plain->fabric_attr && plain->fabric_attr->prov_name
                          ? plain->fabric_attr->prov_name : "?",
                      /*gpu_visible=*/false, why);
  return open_entry(std::move(plain), rank, size, timeout_ms, max_msg_bytes, std::move(async),
                    out);
}

plx_result_t OfiTransport::open_entry(InfoPtr info, int rank, int size, int timeout_ms,
                                      size_t max_msg_bytes, std::shared_ptr<AsyncState> async,
                                      std::unique_ptr<OfiTransport>* out) {
  int spin_us = 0;  // read before any resource is made: a malformed value fails with nothing open
  PLX_CHECK(config_spin_us(&spin_us));
  const char* provider = info->fabric_attr && info->fabric_attr->prov_name
                             ? info->fabric_attr->prov_name : "";
  if (const std::string problem = process_rxm_buffer_size_problem(provider); !problem.empty()) {
    return set_error(PLX_ERROR_INVALID_USAGE, fmt::format("rank {}: {}", rank, problem));
  }
  std::unique_ptr<OfiTransport> transport(new OfiTransport());
  transport->rank_ = rank;
  transport->size_ = size;
  transport->timeout_ = std::chrono::milliseconds(timeout_ms);
  transport->spin_ = std::chrono::microseconds(spin_us);
  transport->async_ = async;
  transport->wait_.setup(rank, transport->timeout_, std::move(async));
  PLX_CHECK(Fabric::open(std::move(info), rank, &transport->fabric_));
  PLX_CHECK(CompletionQueue::open(transport->fabric_->domain(), rank, &transport->cq_));
  PLX_CHECK(Endpoint::open(*transport->fabric_, *transport->cq_, rank, &transport->endpoint_));
  const size_t provider_max = transport->fabric_->max_msg_bytes();
  transport->max_msg_bytes_ =
      max_msg_bytes > 0 ? std::min(max_msg_bytes, provider_max) : provider_max;
  transport->hmem_ = (transport->fabric_->info().caps & FI_HMEM) != 0;
  transport->eager_bytes_ = process_eager_limit_bytes(transport->fabric_->provider_name());
  transport->registrations_ = RegistrationCache(RegistrationCache::kDefaultCapacity,
                                                domain_registrar(transport->fabric_->domain()));
  log_message(LogLevel::Info, "transport {} open: address {} bytes, max message {} bytes{}",
              transport->fabric_->provider_name(), transport->endpoint_->name().size(),
              transport->max_msg_bytes_, transport->hmem_ ? ", FI_HMEM" : "");
  *out = std::move(transport);
  return PLX_SUCCESS;
}

OfiTransport::~OfiTransport() {
  if (!split_ops_.empty() && !wait_.failed()) {
    log_message(LogLevel::Warn, "transport closed with {} split messages in flight",
                split_ops_.size());
  }
  const bool failed = wait_.failed() || (async_ && async_->error() != PLX_SUCCESS);
  if (failed && !(async_ && async_->failed_only_by_peer_abort())) {
    // A peer was lost or the provider failed: operations may still be posted against the dead
    // peer's connection, and tcp;ofi_rxm has been seen to crash in fi_close then. The
    // communicator is being thrown away after a failure, so leak the provider objects rather
    // than close them (shm regions left behind are removed by the next process's shm probe).
    // Registrations too: an operation still posted may be using one. A split communicator that
    // a live peer aborted on purpose is closed normally: its parent goes on, and must not
    // collect leaked descriptors abort after abort.
    for (auto& [req, registration] : registrations_in_use_) registration->abandon();
    registrations_.abandon_all();
    (void)endpoint_.release();
    (void)cq_.release();
    (void)fabric_.release();
  }
}

plx_result_t OfiTransport::connect(const std::vector<std::vector<uint8_t>>& addresses) {
  if (addresses.size() != static_cast<size_t>(size_)) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("rank {}: {} addresses for {} ranks", rank_,
                                                     addresses.size(), size_));
  }
  PLX_CHECK(endpoint_->insert_peers(addresses));
  connected_ = true;
  return PLX_SUCCESS;
}

plx_result_t OfiTransport::open_sibling(int rank, int size, int timeout_ms,
                                        std::shared_ptr<AsyncState> async,
                                        std::unique_ptr<Transport>* out) const {
  InfoPtr info(fi_dupinfo(&fabric_->info()));
  if (!info) {
    return set_error(PLX_ERROR_SYSTEM,
                     fmt::format("rank {}: fi_dupinfo failed (out of memory)", rank_));
  }
  std::unique_ptr<OfiTransport> sibling;
  PLX_CHECK(open(std::move(info), rank, size, timeout_ms, max_msg_bytes_, std::move(async),
                 &sibling));
  sibling->eager_bytes_ = eager_bytes_;  // a split cuts segments as its parent does
  *out = std::move(sibling);
  return PLX_SUCCESS;
}

plx_result_t OfiTransport::post_send(int peer, uint64_t tag, const void* buf, size_t bytes,
                                     Request& req) {
  return post(true, peer, tag, const_cast<void*>(buf), bytes, req);
}

plx_result_t OfiTransport::post_recv(int peer, uint64_t tag, void* buf, size_t bytes,
                                     Request& req) {
  return post(false, peer, tag, buf, bytes, req);
}

plx_result_t OfiTransport::post(bool is_send, int peer, uint64_t tag, void* buf, size_t bytes,
                                Request& req, void* desc) {
  const char* what = is_send ? "post_send" : "post_recv";
  if (wait_.failed()) return wait_.sticky_failure();
  // A peer known lost (or an abort): fail before touching the provider, whose connection state
  // for the dead peer may be half torn down.
  if (wait_.async_failed()) return wait_.check_async(what);
  if (!connected_) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("rank {}: {} before connect", rank_, what));
  }
  if (peer < 0 || peer >= size_) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("rank {}: {}: peer {} not in 0..{}",
                                                             rank_, what, peer, size_ - 1));
  }
  static unsigned char empty_buffer[1];
  if (!buf) buf = empty_buffer;  // zero-byte messages still need a valid address
  req.done = false;
  req.result = PLX_SUCCESS;
  req.peer = peer;
  req.bytes = bytes;
  log_message(LogLevel::Trace, "{} peer {} tag {:#x} {} bytes", what, peer, tag, bytes);
  if (bytes <= max_msg_bytes_) {
    PLX_CHECK(post_one(is_send, peer, tag, buf, bytes, req.opaque, desc));
    add_outstanding(is_send, bytes);
    return PLX_SUCCESS;
  }

  const size_t parts = (bytes + max_msg_bytes_ - 1) / max_msg_bytes_;
  if (parts > kMaxParts) {
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("rank {}: {}: {} bytes to rank {} need {} parts of {} bytes; "
                                 "at most {} are supported",
                                 rank_, what, bytes, peer, parts, max_msg_bytes_, kMaxParts));
  }
  if ((tag >> kPartShift) != 0) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("rank {}: {}: tag {:#x} uses bits {}..63, reserved for split "
                                 "messages",
                                 rank_, what, tag, kPartShift));
  }
  auto op = std::make_unique<SplitOp>();
  op->req = &req;
  op->remaining = parts;
  op->contexts.resize(parts);
  SplitOp* raw = op.get();
  for (auto& context : op->contexts) split_parts_[&context] = raw;
  split_ops_[raw] = std::move(op);
  add_outstanding(is_send, bytes);  // a part that fails to post fails the transport (sticky)
  auto* base = static_cast<unsigned char*>(buf);
  for (size_t i = 0; i < parts; ++i) {
    const size_t offset = i * max_msg_bytes_;
    const size_t part_bytes = std::min(max_msg_bytes_, bytes - offset);
    PLX_CHECK(post_one(is_send, peer, tag | (static_cast<uint64_t>(i) << kPartShift),
                       base + offset, part_bytes, &raw->contexts[i], desc));
  }
  return PLX_SUCCESS;
}

plx_result_t OfiTransport::post_one(bool is_send, int peer, uint64_t tag, void* buf,
                                    size_t bytes, void* context, void* desc) {
  const auto start = Clock::now();
  while (true) {
    const ssize_t ret =
        is_send ? fi_tsend(endpoint_->ep(), buf, bytes, desc, endpoint_->peer(peer), tag, context)
                : fi_trecv(endpoint_->ep(), buf, bytes, desc, endpoint_->peer(peer), tag, 0,
                           context);
    if (ret == 0) return PLX_SUCCESS;
    if (ret != -FI_EAGAIN) {
      ofi_error(rank_, is_send ? "fi_tsend" : "fi_trecv", ret,
                fmt::format("{} bytes {} rank {}", bytes, is_send ? "to" : "from", peer));
      return fail(PLX_ERROR_TRANSPORT, last_error());
    }
    // The provider's queues are full: make progress, then retry.
    size_t completed = 0;
    PLX_CHECK(progress(&completed));
    if (wait_.async_failed()) {
      return wait_.check_async(
          fmt::format("posting a {} rank {}", is_send ? "send to" : "receive from", peer));
    }
    const auto now = Clock::now();
    if (now - start > timeout_) {
      return fail(PLX_ERROR_TIMEOUT,
                  fmt::format("rank {}: {} to rank {} stayed busy (FI_EAGAIN) for "
                              "PLEXUS_TIMEOUT_MS={} ms",
                              rank_, is_send ? "fi_tsend" : "fi_trecv", peer, timeout_.count()));
    }
    if (completed == 0) idle_backoff(now - start);
  }
}

plx_result_t OfiTransport::progress(size_t* completed) {
  *completed = 0;
  Completion entries[16];
  for (int pass = 0; pass < 64; ++pass) {
    size_t count = 0;
    if (cq_->poll(entries, 16, &count) != PLX_SUCCESS) {
      return fail(PLX_ERROR_TRANSPORT, last_error());
    }
    for (size_t i = 0; i < count; ++i) complete(entries[i]);
    *completed += count;
    if (wait_.failed()) return wait_.sticky_failure();
    if (count == 0) break;
  }
  return PLX_SUCCESS;
}

void OfiTransport::complete(const Completion& completion) {
  Request* req = nullptr;
  bool finished = true;
  if (!split_parts_.empty()) {
    if (auto it = split_parts_.find(completion.context); it != split_parts_.end()) {
      SplitOp* op = it->second;
      split_parts_.erase(it);
      req = op->req;
      finished = --op->remaining == 0;
      if (finished) split_ops_.erase(op);
    }
  }
  if (!req) req = reinterpret_cast<Request*>(completion.context);
  if (completion.result != PLX_SUCCESS) {
    req->result = completion.result;
    req->done = true;  // a registration it used stays held: other parts may still be posted
    add_outstanding(completion.is_send, 0, req->bytes);
    fail(completion.result, fmt::format("rank {}: {} rank {}: {}", rank_,
                                        completion.is_send ? "send to" : "receive from",
                                        req->peer, completion.error));
    return;
  }
  if (finished) {
    req->done = true;
    add_outstanding(completion.is_send, 0, req->bytes);
    release_registration(req);
    log_message(LogLevel::Trace, "{} rank {} complete ({} bytes)",
                completion.is_send ? "send to" : "receive from", req->peer, req->bytes);
  }
}

void OfiTransport::add_outstanding(bool is_send, size_t posted, size_t completed) {
  std::atomic<size_t>& bytes = outstanding_bytes_[is_send ? 1 : 0];
  const size_t now = bytes.load(std::memory_order_relaxed) + posted;
  bytes.store(now - std::min(now, completed), std::memory_order_relaxed);
}

WaitHint OfiTransport::wait_hint() const {
  // While a large transfer is posted the provider needs fi_cq_read to move its protocol on
  // (manual progress), though no completion may show for a long time: keep polling, yielding
  // between polls, for up to the time those bytes take at kBusyMinRate, then sleep in short
  // steps (at most kBusySleep) for kBusyShortSleeps.
  const size_t receives = outstanding_bytes_[0].load(std::memory_order_relaxed);
  const size_t sends = outstanding_bytes_[1].load(std::memory_order_relaxed);
  if (receives + sends < kBusyMinBytes) return {};
  const auto time_of = [](size_t bytes, std::chrono::nanoseconds most) {
    return std::min(most, std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::duration<double>(static_cast<double>(bytes) /
                                                            kBusyMinRate)));
  };
  return {std::max(time_of(sends, kBusyMaxPollSends), time_of(receives, kBusyMaxPollReceives)),
          kBusySleep, kBusyShortSleeps};
}

void OfiTransport::idle_backoff(Clock::duration idle) const {
  const WaitHint hint = wait_hint();
  const Clock::duration poll_for =
      std::max<Clock::duration>(spin_, std::chrono::duration_cast<Clock::duration>(hint.poll_for));
  const bool short_sleeps = idle < poll_for + hint.short_sleeps_for;
  const Clock::duration longest = std::chrono::duration_cast<Clock::duration>(
      std::min<std::chrono::nanoseconds>(short_sleeps ? hint.max_sleep : std::chrono::nanoseconds::max(),
                                         std::chrono::milliseconds(1)));
  if (idle < poll_for) {
    sched_yield();
    return;
  }
  sleep_step(idle - poll_for + spin_, longest);
}

plx_result_t OfiTransport::wait_all(Request* const* reqs, size_t n) {
  return wait_.wait_all(
      reqs, n, [this](size_t* completed) { return progress(completed); },
      [this](Clock::duration idle) {
        idle_backoff(idle);
        return PLX_SUCCESS;
      });
}

plx_result_t OfiTransport::test(Request& req, bool* done) {
  return wait_.test(req, done, [this](size_t* completed) { return progress(completed); });
}

void OfiTransport::poll_once() {
  if (wait_.failed()) return;
  size_t completed = 0;
  progress(&completed);
}

plx_result_t OfiTransport::fail(plx_result_t code, std::string message) {
  if (code == PLX_ERROR_TRANSPORT) return wait_.fail_after_grace(code, std::move(message));
  return wait_.fail(code, std::move(message));
}

std::string OfiTransport::nic() const {
  const fi_info& info = fabric_->info();
  return info.domain_attr != nullptr && info.domain_attr->name != nullptr
             ? std::string(info.domain_attr->name)
             : std::string();
}

}  // namespace plexus::comm::ofi
