// device_deferred.cpp - the build-independent part of device_deferred.h: the pinned layout, and
// staging a call through a CopyEngine with its copy back as a completion step.
#include "comm/device/device_deferred.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/submit.h"

namespace plexus::comm::device {

namespace {

constexpr size_t kAlign = 256;

// The call's pinned memory: freed with the last reference unless leak() was called.
class Staging {
 public:
  explicit Staging(std::shared_ptr<CopyEngine> engine) : engine_(std::move(engine)) {}
  ~Staging() {
    if (pinned_ != nullptr && !leaked_) engine_->release(pinned_);
  }
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  plx_result_t allocate(size_t bytes, const std::string& what) {
    return engine_->allocate(bytes, &pinned_, what);
  }
  unsigned char* at(size_t offset) const { return static_cast<unsigned char*>(pinned_) + offset; }
  CopyEngine& engine() const { return *engine_; }
  void leak() { leaked_ = true; }

 private:
  std::shared_ptr<CopyEngine> engine_;
  void* pinned_ = nullptr;
  bool leaked_ = false;
};

}  // namespace

bool pinned_layout(const DeviceArgs& args, PinnedLayout* out) {
  const size_t elem = plx_datatype_size(args.datatype);
  if (elem == 0 || args.send_count > SIZE_MAX / elem / 2 ||
      args.recv_count > SIZE_MAX / elem / 2) {
    return false;
  }
  PinnedLayout layout;
  layout.send_bytes = args.send ? args.send_count * elem : 0;
  layout.recv_bytes = args.recv ? args.recv_count * elem : 0;
  const auto send_lo = reinterpret_cast<uintptr_t>(args.send);
  const auto recv_lo = reinterpret_cast<uintptr_t>(args.recv);
  const bool overlap = layout.send_bytes > 0 && layout.recv_bytes > 0 &&
                       send_lo < recv_lo + layout.recv_bytes &&
                       recv_lo < send_lo + layout.send_bytes;
  if (overlap) {
    const uintptr_t lo = std::min(send_lo, recv_lo);
    layout.send_at = send_lo - lo;
    layout.recv_at = recv_lo - lo;
    layout.total_bytes =
        std::max(send_lo + layout.send_bytes, recv_lo + layout.recv_bytes) - lo;
  } else {
    layout.recv_at = (layout.send_bytes + kAlign - 1) / kAlign * kAlign;
    layout.total_bytes = layout.recv_at + layout.recv_bytes;
  }
  layout.total_bytes = std::max<size_t>(layout.total_bytes, 1);
  *out = layout;
  return true;
}

bool may_still_be_written(plx_result_t outcome) {
  switch (outcome) {
    case PLX_SUCCESS:
    case PLX_ERROR_ABORTED:
    case PLX_ERROR_MISMATCH:
    case PLX_ERROR_INVALID_ARGUMENT:
    case PLX_ERROR_INVALID_USAGE:
      return false;
    default:
      return true;
  }
}

plx_result_t stage_deferred(const char* fn, int rank, const DeviceArgs& args,
                            std::shared_ptr<CopyEngine> engine, const HostRun& queue) {
  PinnedLayout layout;
  if (!pinned_layout(args, &layout)) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: sendbuf count {} or recvbuf count {} of {} bytes "
                                 "per element is too large to stage (the bytes overflow size_t)",
                                 fn, rank, args.send_count, args.recv_count,
                                 plx_datatype_size(args.datatype)));
  }
  auto staging = std::make_shared<Staging>(std::move(engine));
  PLX_CHECK(staging->allocate(layout.total_bytes,
                              fmt::format("cudaMallocHost of {} bytes of pinned staging for this "
                                          "call's buffers",
                                          layout.total_bytes)));
  // 2. copy in
  if (layout.send_bytes > 0) {
    PLX_CHECK(staging->engine().to_pinned(
        staging->at(layout.send_at), args.send, layout.send_bytes,
        fmt::format("copying sendbuf {} ({} bytes) to pinned staging", args.send,
                    layout.send_bytes)));
  }
  if (args.recv_read && layout.recv_bytes > 0) {
    PLX_CHECK(staging->engine().to_pinned(
        staging->at(layout.recv_at), args.recv, layout.recv_bytes,
        fmt::format("copying recvbuf {} ({} bytes) to pinned staging",
                    static_cast<const void*>(args.recv), layout.recv_bytes)));
  }
  if (layout.send_bytes > 0 || (args.recv_read && layout.recv_bytes > 0)) {
    PLX_CHECK(staging->engine().wait("waiting for the copies into pinned staging"));
  }
  // 4. complete (attached to the operation queued in 3)
  void* recv = args.recv;
  Completion step = [staging, layout, recv, fn, rank](plx_result_t outcome) -> plx_result_t {
    if (outcome != PLX_SUCCESS) {
      if (may_still_be_written(outcome)) {
        staging->leak();
        log_message(LogLevel::Warn,
                    "{}: rank {}: the operation failed ({}) and the transport may still write "
                    "into its {} bytes of pinned staging: they are leaked",
                    fn, rank, plx_get_error_string(outcome), layout.total_bytes);
      }
      return PLX_SUCCESS;  // the operation's own error is the result
    }
    if (layout.recv_bytes == 0) return PLX_SUCCESS;
    PLX_CHECK(staging->engine().from_pinned(
        recv, staging->at(layout.recv_at), layout.recv_bytes,
        fmt::format("copying the result ({} bytes) from pinned staging to recvbuf {}",
                    layout.recv_bytes, recv)));
    return staging->engine().wait(
        fmt::format("waiting for the copy of the result to recvbuf {}", recv));
  };
  // 3. queue
  const void* host_send = layout.send_bytes > 0 ? staging->at(layout.send_at) : args.send;
  void* host_recv = layout.recv_bytes > 0 ? staging->at(layout.recv_at) : args.recv;
  CompletionScope scope(std::move(step));
  return queue(host_send, host_recv);
}

}  // namespace plexus::comm::device
