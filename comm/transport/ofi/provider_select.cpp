// provider_select.cpp - provider choice (see provider_select.h).
#include "comm/transport/ofi/provider_select.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <rdma/fi_endpoint.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"

namespace plexus::comm::ofi {

namespace {

// Signal handlers that PSM libraries install in their library constructors (before main):
// libinfinipath (PSM, TrueScale; linked into libfabric for its psm provider) catches SIGTERM,
// SIGINT, SIGSEGV, SIGBUS, SIGABRT and SIGILL unless IPATH_NO_BACKTRACE is set, prints a
// backtrace and calls exit() from the handler. exit() in a signal handler runs the atexit
// handlers and static destructors while other threads (the communicator's) hold their locks,
// so a SIGTERM during communicator creation could hang the rank instead of ending it (Open
// MPI disables the same hijacking, open-mpi/ompi#1781; libpsm2's switch is HFI_NO_BACKTRACE).
// Plexus uses none of these providers.
bool is_psm_library(const char* path) {
  if (path == nullptr) return false;
  const char* name = std::strrchr(path, '/');
  name = name != nullptr ? name + 1 : path;
  return std::strncmp(name, "libinfinipath", 13) == 0 || std::strncmp(name, "libpsm", 6) == 0;
}

// Resets to the default action every handler whose code lives in a PSM library, and keeps
// libfabric from initialising the psm providers (FI_PROVIDER excludes them) unless the user
// chose providers with FI_PROVIDER or asked for a psm one with PLEXUS_FI_PROVIDER. Runs once,
// when libplexus is loaded: after the constructors of libfabric's libraries (ELF runs a
// library's dependencies first), before main and before any fi_getinfo of this process.
void contain_psm_signal_handlers() {
  for (int signo : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) {
    struct sigaction current {};
    if (sigaction(signo, nullptr, &current) != 0) continue;
    void* code = (current.sa_flags & SA_SIGINFO) != 0
                     ? reinterpret_cast<void*>(current.sa_sigaction)
                     : reinterpret_cast<void*>(current.sa_handler);
    if (code == reinterpret_cast<void*>(SIG_DFL) || code == reinterpret_cast<void*>(SIG_IGN)) {
      continue;
    }
    Dl_info where {};
    if (dladdr(code, &where) != 0 && is_psm_library(where.dli_fname)) {
      struct sigaction fallback {};
      fallback.sa_handler = SIG_DFL;
      sigemptyset(&fallback.sa_mask);
      sigaction(signo, &fallback, nullptr);
    }
  }
  const std::optional<std::string> forced = config_string("PLEXUS_FI_PROVIDER");
  if (std::getenv("FI_PROVIDER") == nullptr &&
      (!forced || forced->find("psm") == std::string::npos)) {
    setenv("FI_PROVIDER", "^psm,psm2,psm3", 0);
  }
}

[[maybe_unused]] const bool g_psm_contained = (contain_psm_signal_handlers(), true);

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

bool same_name(const char* a, const char* b) {
  return (a == nullptr && b == nullptr) || (a != nullptr && b != nullptr && std::strcmp(a, b) == 0);
}

bool same_source(const fi_info* a, const fi_info* b) {
  return a->src_addrlen == b->src_addrlen &&
         (a->src_addrlen == 0 || std::memcmp(a->src_addr, b->src_addr, a->src_addrlen) == 0);
}

plx_result_t choose_provider(int rank, bool all_ranks_on_this_host, bool shm_ok_everywhere,
                             InfoPtr* out);

// What `hmem` offers host messages less than `plain` does ("" when nothing): shm of libfabric
// 1.17 has no inject protocol in its FI_HMEM entry, so a rank posting many sends before their
// receives (a group) stalls where the plain entry buffers them.
std::string host_cost(const fi_info& hmem, const fi_info& plain) {
  std::string cost;
  const auto less = [&](const char* what, size_t with, size_t without) {
    if (with < without) cost += fmt::format("{}{} {} < {}", cost.empty() ? "" : ", ", what, with,
                                            without);
  };
  if (hmem.tx_attr && plain.tx_attr) {
    less("inject_size", hmem.tx_attr->inject_size, plain.tx_attr->inject_size);
    less("tx size", hmem.tx_attr->size, plain.tx_attr->size);
  }
  if (hmem.rx_attr && plain.rx_attr) less("rx size", hmem.rx_attr->size, plain.rx_attr->size);
  if (hmem.ep_attr && plain.ep_attr) {
    less("max_msg_size", hmem.ep_attr->max_msg_size, plain.ep_attr->max_msg_size);
  }
  return cost;
}

}  // namespace

InfoPtr hmem_variant(const fi_info& chosen) {
  if ((chosen.caps & FI_HMEM) != 0) return InfoPtr(fi_dupinfo(&chosen));
  const char* provider = chosen.fabric_attr ? chosen.fabric_attr->prov_name : nullptr;
  if (provider == nullptr) return nullptr;
  const char* domain = chosen.domain_attr ? chosen.domain_attr->name : nullptr;
  InfoPtr hints = make_hints(provider);
  hints->caps |= FI_HMEM;
  hints->domain_attr->mr_mode |= FI_MR_HMEM;
  hints->addr_format = chosen.addr_format;
  if (domain != nullptr) hints->domain_attr->name = strdup(domain);
  fi_info* list = nullptr;
  if (fi_getinfo(kApiVersion, nullptr, nullptr, 0, hints.get(), &list) != 0) return nullptr;
  InfoPtr owned(list);
  const fi_info* match = nullptr;
  for (const fi_info* info = list; info; info = info->next) {
    if ((info->caps & FI_HMEM) == 0 || info->addr_format != chosen.addr_format ||
        !same_name(info->fabric_attr ? info->fabric_attr->prov_name : nullptr, provider) ||
        !same_name(info->domain_attr ? info->domain_attr->name : nullptr, domain)) {
      continue;
    }
    if (match == nullptr) match = info;
    if (same_source(info, &chosen)) {
      match = info;
      break;
    }
  }
  return match ? InfoPtr(fi_dupinfo(match)) : nullptr;
}

plx_result_t select_provider(int rank, bool all_ranks_on_this_host, bool shm_ok_everywhere,
                             InfoPtr* out) {
  std::optional<int64_t> hmem;
  if (config_integer("PLEXUS_FI_HMEM", 0, 2, &hmem) != PLX_SUCCESS) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("rank {}: {}", rank, last_error()));
  }
  InfoPtr chosen;
  PLX_CHECK(choose_provider(rank, all_ranks_on_this_host, shm_ok_everywhere, &chosen));
  const char* provider = chosen->fabric_attr->prov_name;
  const int64_t mode = hmem.value_or(1);
  InfoPtr with_hmem = mode == 0 ? nullptr : hmem_variant(*chosen);
  const std::string cost = with_hmem ? host_cost(*with_hmem, *chosen) : std::string();
  if (mode == 0) {
    log_message(LogLevel::Info, "provider {}: FI_HMEM not asked for (PLEXUS_FI_HMEM=0)",
                provider);
  } else if (!with_hmem) {
    log_message(LogLevel::Info, "provider {}: no FI_HMEM (device buffers are staged through "
                "host memory)", provider);
  } else if (mode == 1 && !cost.empty()) {
    log_message(LogLevel::Info, "provider {}: its FI_HMEM entry offers host messages less ({}); "
                "not used (PLEXUS_FI_HMEM=2 uses it)", provider, cost);
  } else {
    log_message(LogLevel::Info, "provider {}: with FI_HMEM (device buffers of plx_send/plx_recv "
                "go to the provider){}", provider, cost.empty() ? "" : "; host messages: " + cost);
    with_hmem->next = chosen.release();  // opened instead should the FI_HMEM entry fail to open
    chosen = std::move(with_hmem);
  }
  *out = std::move(chosen);
  return PLX_SUCCESS;
}

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

namespace {

// The provider choice of provider_select.h, before FI_HMEM is asked for.
plx_result_t choose_provider(int rank, bool all_ranks_on_this_host, bool shm_ok_everywhere,
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

}  // namespace

}  // namespace plexus::comm::ofi
