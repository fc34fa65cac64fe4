// ofi_transport_hmem.cpp - sends and receives of registered memory (FI_HMEM) on the libfabric
// transport (see transport.h and ofi_transport.h).
//
// Per message: the registration covering the buffer comes from the cache (registered on a miss),
// its descriptor goes to every fi_tsend / fi_trecv of the message (all parts of a split one), and
// the operation holds the registration until its request completes. Zero-byte messages need no
// registration and are posted as ordinary ones.
#include <fmt/format.h>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/transport/ofi/ofi_transport.h"

namespace plexus::comm::ofi {

namespace {

size_t space_index(MemorySpace space) { return space == MemorySpace::Cuda ? 1 : 0; }

const char* space_name(MemorySpace space) {
  return space == MemorySpace::Cuda ? "CUDA device" : "host";
}

}  // namespace

bool OfiTransport::hmem_supported(MemorySpace space) const {
  return hmem_ && !hmem_failed_[space_index(space)].load(std::memory_order_acquire);
}

plx_result_t OfiTransport::post_send_hmem(int peer, uint64_t tag, const void* buf, size_t bytes,
                                          const BufferMemory& memory, Request& req) {
  return post_hmem(true, peer, tag, const_cast<void*>(buf), bytes, memory, req);
}

plx_result_t OfiTransport::post_recv_hmem(int peer, uint64_t tag, void* buf, size_t bytes,
                                          const BufferMemory& memory, Request& req) {
  return post_hmem(false, peer, tag, buf, bytes, memory, req);
}

plx_result_t OfiTransport::post_hmem(bool is_send, int peer, uint64_t tag, void* buf,
                                     size_t bytes, const BufferMemory& memory, Request& req) {
  const char* what = is_send ? "post_send_hmem" : "post_recv_hmem";
  if (wait_.failed()) return wait_.sticky_failure();
  if (!hmem_supported(memory.space)) {
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("rank {}: {}: provider {} {}", rank_, what,
                                 fabric_->provider_name(),
                                 hmem_ ? fmt::format("could not register {} memory earlier on "
                                                     "this communicator",
                                                     space_name(memory.space))
                                       : std::string("was not opened with FI_HMEM")));
  }
  if (bytes == 0 || buf == nullptr) return post(is_send, peer, tag, buf, bytes, req);
  if (peer < 0 || peer >= size_) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("rank {}: {}: peer {} not in 0..{}",
                                                             rank_, what, peer, size_ - 1));
  }
  std::shared_ptr<Registration> registration;
  const int ret = registrations_.find(memory, buf, bytes, &registration);
  if (ret != 0) {
    hmem_failed_[space_index(memory.space)].store(true, std::memory_order_release);
    const std::string message = fmt::format(
        "rank {}: {}: fi_mr_regattr of {} bytes of {} memory (device {}) on provider {} failed: "
        "{} ({}); {} buffers go through host memory on this communicator from now on",
        rank_, what, bytes, space_name(memory.space), memory.device, fabric_->provider_name(),
        fi_strerror(ret < 0 ? -ret : ret), ret, space_name(memory.space));
    log_message(LogLevel::Info, "{}", message);
    return set_error(PLX_ERROR_UNSUPPORTED, message);
  }
  // Held before posting: a completion inside post() (progress while the queues are full) or
  // a failure after some parts were posted must find it.
  void* desc = registration->desc();
  registrations_in_use_[&req] = std::move(registration);
  return post(is_send, peer, tag, buf, bytes, req, desc);
}

void OfiTransport::release_registration(Request* req) {
  if (registrations_in_use_.empty()) return;
  registrations_in_use_.erase(req);
}

}  // namespace plexus::comm::ofi
