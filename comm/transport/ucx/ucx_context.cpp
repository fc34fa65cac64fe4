// ucx_context.cpp - ucp_init, ucp_worker_create, ucp_worker_arm + poll (see ucx_context.h).
#include "comm/transport/ucx/ucx_context.h"

#include <fmt/format.h>
#include <poll.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/transport/ucx/ucx_util.h"

namespace plexus::comm::ucx {

namespace {

constexpr int kMaxProgressPasses = 256;

struct ConfigReleaser {
  void operator()(ucp_config_t* config) const { ucp_config_release(config); }
};

// Sets UCX_<name>=value in `config` unless the user's environment already sets UCX_<name>.
// Appends "UCX_<name>=value" to *applied when it does.
plx_result_t default_setting(int rank, ucp_config_t* config, const char* name, const char* value,
                             std::string* applied) {
  const std::string variable = std::string("UCX_") + name;
  if (env_value(variable.c_str())) return PLX_SUCCESS;
  const ucs_status_t status = ucp_config_modify(config, name, value);
  if (status != UCS_OK) {
    return ucx_error(rank, "ucp_config_modify", status, fmt::format("{}={}", variable, value));
  }
  if (!applied->empty()) *applied += " ";
  *applied += fmt::format("{}={}", variable, value);
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t UcxContext::open(int rank, bool loopback_only, std::unique_ptr<UcxContext>* out) {
  std::unique_ptr<UcxContext> ucx(new UcxContext());
  ucx->rank_ = rank;

  ucp_config_t* raw_config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &raw_config);
  if (status != UCS_OK) return ucx_error(rank, "ucp_config_read", status);
  std::unique_ptr<ucp_config_t, ConfigReleaser> config(raw_config);
  if (loopback_only) {
    // Every rank is on this host: keep UCX's TCP traffic on the loopback interface, as the
    // libfabric transport does (provider_select.cpp).
    PLX_CHECK(default_setting(rank, config.get(), "NET_DEVICES", "lo", &ucx->defaults_applied_));
  }

  ucp_params_t params = {};
  params.field_mask = UCP_PARAM_FIELD_FEATURES;
  params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
  status = ucp_init(&params, config.get(), &ucx->context_);
  if (status != UCS_OK) {
    ucx->context_ = nullptr;
    return ucx_error(rank, "ucp_init", status, "features TAG|WAKEUP");
  }

  ucp_worker_params_t worker_params = {};
  worker_params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  worker_params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  status = ucp_worker_create(ucx->context_, &worker_params, &ucx->worker_);
  if (status != UCS_OK) {
    ucx->worker_ = nullptr;
    return ucx_error(rank, "ucp_worker_create", status);
  }
  status = ucp_worker_get_efd(ucx->worker_, &ucx->event_fd_);
  if (status != UCS_OK) return ucx_error(rank, "ucp_worker_get_efd", status);

  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  status = ucp_worker_get_address(ucx->worker_, &address, &address_bytes);
  if (status != UCS_OK) return ucx_error(rank, "ucp_worker_get_address", status);
  const auto* first = reinterpret_cast<const uint8_t*>(address);
  ucx->address_.assign(first, first + address_bytes);
  ucp_worker_release_address(ucx->worker_, address);
  *out = std::move(ucx);
  return PLX_SUCCESS;
}

UcxContext::~UcxContext() {
  if (worker_) ucp_worker_destroy(worker_);
  if (context_) ucp_cleanup(context_);
}

unsigned UcxContext::progress() {
  unsigned events = 0;
  for (int pass = 0; pass < kMaxProgressPasses; ++pass) {
    const unsigned now = ucp_worker_progress(worker_);
    if (now == 0) break;
    events += now;
  }
  return events;
}

plx_result_t UcxContext::wait_for_events(int timeout_ms) {
  const ucs_status_t status = ucp_worker_arm(worker_);
  if (status == UCS_ERR_BUSY) return PLX_SUCCESS;  // events arrived meanwhile: progress first
  if (status != UCS_OK) return ucx_error(rank_, "ucp_worker_arm", status);
  pollfd entry = {};
  entry.fd = event_fd_;
  entry.events = POLLIN;
  if (poll(&entry, 1, timeout_ms) < 0 && errno != EINTR) {
    return set_error(PLX_ERROR_SYSTEM, fmt::format("rank {}: poll on the UCX worker's event fd "
                                                   "{} failed: {}",
                                                   rank_, event_fd_, std::strerror(errno)));
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::ucx
