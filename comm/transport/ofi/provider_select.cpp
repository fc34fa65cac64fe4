// provider_select.cpp - provider choice (see provider_select.h).
#include "comm/transport/ofi/provider_select.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <rdma/fi_endpoint.h>

#include <cstring>

#include "comm/core/config.h"
#include "comm/core/error.h"
#include "comm/core/log.h"

namespace plexus::comm::ofi {

namespace {

bool is_loopback(const fi_info* info) {
  if (info->addr_format == FI_SOCKADDR_IN && info->src_addr) {
    const auto* addr = static_cast<const sockaddr_in*>(info->src_addr);
    return (ntohl(addr->sin_addr.s_addr) >> 24) == 127;
  }
  return info->domain_attr && info->domain_attr->name &&
         std::strcmp(info->domain_attr->name, "lo") == 0;
}

bool is_ipv4(const fi_info* info) { return info->addr_format == FI_SOCKADDR_IN; }

// Picks one entry of the fi_getinfo list: for a one-host job the loopback interface, else the
// first IPv4 non-loopback one, else the first entry. Returns a copy the caller owns.
InfoPtr pick_entry(const fi_info* list, bool all_ranks_on_this_host) {
  const fi_info* chosen = nullptr;
  for (const fi_info* info = list; info && !chosen; info = info->next) {
    if (all_ranks_on_this_host ? is_loopback(info) : (is_ipv4(info) && !is_loopback(info))) {
      chosen = info;
    }
  }
  if (!chosen) chosen = list;
  return InfoPtr(fi_dupinfo(chosen));
}

// fi_getinfo for one provider name; on failure returns the libfabric error code.
int get_info(const std::string& provider, InfoPtr* out) {
  InfoPtr hints = make_hints(provider);
  fi_info* list = nullptr;
  const int ret = fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list);
  if (ret != 0) return ret;
  out->reset(list);
  return 0;
}

}  // namespace

InfoPtr make_hints(const std::string& provider) {
  InfoPtr hints(fi_allocinfo());
  hints->caps = FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  if (!provider.empty()) hints->fabric_attr->prov_name = strdup(provider.c_str());
  return hints;
}

plx_result_t select_provider(int rank, bool all_ranks_on_this_host, bool shm_ok_everywhere,
                             InfoPtr* out) {
  if (auto forced = config_string("PLEXUS_FI_PROVIDER")) {
    InfoPtr list;
    const int ret = get_info(*forced, &list);
    if (ret != 0) {
      return ofi_error(rank, "fi_getinfo", ret,
                       fmt::format("PLEXUS_FI_PROVIDER={} offers no tagged RDM endpoint", *forced));
    }
    *out = pick_entry(list.get(), all_ranks_on_this_host);
    log_message(LogLevel::Info, "provider {} (PLEXUS_FI_PROVIDER={})",
                (*out)->fabric_attr->prov_name, *forced);
    return PLX_SUCCESS;
  }

  InfoPtr list;
  if (get_info("efa", &list) == 0) {
    *out = pick_entry(list.get(), false);
    log_message(LogLevel::Info, "provider efa (present on this host)");
    return PLX_SUCCESS;
  }
  if (all_ranks_on_this_host) {
    if (shm_ok_everywhere && get_info("shm", &list) == 0) {
      *out = pick_entry(list.get(), true);
      log_message(LogLevel::Info, "provider shm (every rank on this host; self-tests passed)");
      return PLX_SUCCESS;
    }
    log_message(LogLevel::Info, "not using shm: its self-test failed on at least one rank; "
                                "falling back to tcp");
  }
  const int ret = get_info("tcp", &list);
  if (ret != 0) {
    return ofi_error(rank, "fi_getinfo", ret,
                     "no usable provider (tried efa, shm, tcp); set PLEXUS_FI_PROVIDER");
  }
  *out = pick_entry(list.get(), all_ranks_on_this_host);
  log_message(LogLevel::Info, "provider {} on {}", (*out)->fabric_attr->prov_name,
              (*out)->domain_attr->name ? (*out)->domain_attr->name : "?");
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::ofi
