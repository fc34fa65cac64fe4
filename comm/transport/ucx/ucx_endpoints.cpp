// ucx_endpoints.cpp - ucp_ep_create with UCP_ERR_HANDLING_MODE_PEER, ucp_ep_close_nbx.
#include "comm/transport/ucx/ucx_endpoints.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/transport/ucx/ucx_util.h"

namespace plexus::comm::ucx {

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kCloseWaitStepMs = 5;
constexpr auto kDestructorCloseBound = std::chrono::seconds(1);

// The UCT transport names in ucp_ep_print_info's lane lines ("lane[0]:  2:tcp/lo.0 md[1] ...").
std::vector<std::string> lane_transports(const std::string& info) {
  std::vector<std::string> names;
  for (size_t at = info.find("lane["); at != std::string::npos; at = info.find("lane[", at + 1)) {
    size_t pos = info.find("]:", at);
    if (pos == std::string::npos) break;
    pos += 2;
    while (pos < info.size() && info[pos] == ' ') ++pos;
    while (pos < info.size() && std::isdigit(static_cast<unsigned char>(info[pos]))) ++pos;
    if (pos >= info.size() || info[pos] != ':') continue;
    const size_t slash = info.find('/', pos + 1);
    const size_t line_end = info.find('\n', pos);
    if (slash == std::string::npos || slash > line_end) continue;
    std::string name = info.substr(pos + 1, slash - pos - 1);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

}  // namespace

plx_result_t UcxEndpoints::create(UcxContext& context, int rank,
                                  const std::vector<std::vector<uint8_t>>& addresses,
                                  ErrorHandler on_error, std::unique_ptr<UcxEndpoints>* out) {
  std::unique_ptr<UcxEndpoints> endpoints(new UcxEndpoints());
  endpoints->context_ = &context;
  endpoints->rank_ = rank;
  endpoints->on_error_ = std::move(on_error);
  const size_t n = addresses.size();
  endpoints->eps_.assign(n, nullptr);
  endpoints->failed_.assign(n, false);
  endpoints->sent_.assign(n, false);
  endpoints->slots_ = std::make_unique<Slot[]>(n);
  for (size_t peer = 0; peer < n; ++peer) {
    if (addresses[peer].empty()) {
      return set_error(PLX_ERROR_INTERNAL,
                       fmt::format("rank {}: empty UCX worker address for rank {}", rank, peer));
    }
    Slot& slot = endpoints->slots_[peer];
    slot.owner = endpoints.get();
    slot.peer = static_cast<int>(peer);
    ucp_ep_params_t params = {};
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = reinterpret_cast<const ucp_address_t*>(addresses[peer].data());
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = &UcxEndpoints::on_ep_error;
    params.err_handler.arg = &slot;
    const ucs_status_t status = ucp_ep_create(context.worker(), &params, &endpoints->eps_[peer]);
    if (status != UCS_OK) {
      endpoints->eps_[peer] = nullptr;
      return ucx_error(rank, "ucp_ep_create", status,
                       fmt::format("no transport of UCX {} reaches rank {} with peer-failure "
                                   "handling (UCX 1.13 has it over tcp only): does UCX_TLS allow "
                                   "tcp, and UCX_NET_DEVICES an interface rank {} listens on?",
                                   ucp_get_version_string(), peer, peer));
    }
  }
  *out = std::move(endpoints);
  return PLX_SUCCESS;
}

UcxEndpoints::~UcxEndpoints() {
  const bool open = std::any_of(eps_.begin(), eps_.end(), [](ucp_ep_h ep) { return ep; });
  if (open) close_all(true, Clock::now() + kDestructorCloseBound);
}

void UcxEndpoints::on_ep_error(void* arg, ucp_ep_h ep, ucs_status_t status) {
  auto* slot = static_cast<Slot*>(arg);
  UcxEndpoints* self = slot->owner;
  log_message(LogLevel::Info, "UCX endpoint to rank {} failed: {}", slot->peer,
              ucs_status_string(status));
  self->failed_[slot->peer] = true;
  if (self->on_error_) self->on_error_(slot->peer, status);
}

size_t UcxEndpoints::close_all(bool force, Clock::time_point deadline) {
  std::vector<void*> closing;
  for (size_t peer = 0; peer < eps_.size(); ++peer) {
    if (!eps_[peer]) continue;
    ucp_request_param_t params = {};
    params.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    params.flags = force || failed_[peer] || !sent_[peer] ? UCP_EP_CLOSE_FLAG_FORCE : 0;
    const ucs_status_ptr_t request = ucp_ep_close_nbx(eps_[peer], &params);
    eps_[peer] = nullptr;
    if (UCS_PTR_IS_PTR(request)) {
      closing.push_back(request);
    } else if (UCS_PTR_IS_ERR(request)) {
      // The endpoint is released anyway; a failed flush only means the peer is gone.
      log_message(LogLevel::Info, "closing the UCX endpoint to rank {}: {}", peer,
                  ucs_status_string(UCS_PTR_STATUS(request)));
    }
  }
  while (!closing.empty()) {
    context_->progress();
    std::erase_if(closing, [](void* request) {
      if (ucp_request_check_status(request) == UCS_INPROGRESS) return false;
      ucp_request_free(request);
      return true;
    });
    if (closing.empty() || Clock::now() >= deadline) break;
    (void)context_->wait_for_events(kCloseWaitStepMs);
  }
  // Still flushing at the deadline: let UCX free them when (if) they finish; destroying the
  // worker releases the endpoints in any case.
  for (void* request : closing) ucp_request_free(request);
  if (!closing.empty()) {
    log_message(LogLevel::Info, "{} UCX endpoints were still closing at the deadline",
                closing.size());
  }
  return closing.size();
}

std::string UcxEndpoints::transports(int peer) const {
  if (peer < 0 || static_cast<size_t>(peer) >= eps_.size() || !eps_[peer]) return "";
  char* text = nullptr;
  size_t text_bytes = 0;
  FILE* stream = open_memstream(&text, &text_bytes);
  if (!stream) return "";
  ucp_ep_print_info(eps_[peer], stream);
  std::fclose(stream);
  const std::string info(text, text_bytes);
  std::free(text);
  std::string joined;
  for (const std::string& name : lane_transports(info)) {
    if (!joined.empty()) joined += ",";
    joined += name;
  }
  return joined;
}

}  // namespace plexus::comm::ucx
