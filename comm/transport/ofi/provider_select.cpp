// provider_select.cpp - provider choice (see provider_select.h).
#include "comm/transport/ofi/provider_select.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <rdma/fi_endpoint.h>
#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <set>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/transport/ofi/nic_select.h"
#include "topology/discover.h"

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

// Resets to the default action every handler whose code lives in a PSM library. Runs once,
// when libplexus is loaded: after the constructors of libfabric's libraries (ELF runs a
// library's dependencies first), before main. The process environment is never written (a
// co-resident NCCL with aws-ofi-nccl reads FI_PROVIDER too): the psm providers are kept out of
// Plexus's choice by the provider name every fi_getinfo of Plexus names in its hints.
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

// Picks the entry of the NIC nearest this rank (nic_select.h) from a list with one domain per
// NIC (efa). The host topology is discovered only when there are several NICs to choose from.
InfoPtr pick_nic(const fi_info* list, int rank, const RankLocality& where) {
  const std::vector<NicCandidate> nics = nic_candidates(list);
  if (nics.empty()) return InfoPtr(fi_dupinfo(list));
  topology::HostTopology host;
  std::string why;
  if (nics.size() > 1 && topology::discover_host(&host, &why) != PLX_SUCCESS) {
    log_message(LogLevel::Warn, "rank {}: the host topology is unknown ({}); NICs are spread by "
                "local rank", rank, why);
    host = {};
  }
  const NicChoice choice = choose_nics(nics, where, host);
  const NicCandidate& nic = nics[choice.nics.front()];
  std::string stripes;
  for (size_t i = 1; i < choice.nics.size(); ++i) {
    stripes += fmt::format("{}{}", i == 1 ? "; as near: " : ", ", nics[choice.nics[i]].domain);
  }
  log_message(LogLevel::Info, "rank {}: NIC {} ({}) of {}: {}{}", rank, nic.domain,
              nic.pci_bus_id.empty() ? "no PCI address" : nic.pci_bus_id, nics.size(),
              choice.reason, stripes);
  const fi_info* entry = nullptr;  // the NIC's first entry, its first IPv4 one if it has one
  for (const fi_info* info = list; info != nullptr; info = info->next) {
    if (info->domain_attr && info->domain_attr->name && nic.domain == info->domain_attr->name &&
        (entry == nullptr || (!is_ipv4(entry) && is_ipv4(info)))) {
      entry = info;
    }
  }
  return InfoPtr(fi_dupinfo(entry != nullptr ? entry : list));
}

// PLEXUS_FI_NICS: the entries of `list` whose domain it names (all of them when it is unset or
// every rank is on this host, *restricted false; the latter says so at INFO). Fails naming the
// variable and the domains offered when none matches.
plx_result_t restrict_to_nics(int rank, bool all_ranks_on_this_host, InfoPtr* list,
                              bool* restricted) {
  *restricted = false;
  const std::optional<std::string> wanted = config_string("PLEXUS_FI_NICS");
  if (!wanted) return PLX_SUCCESS;
  if (all_ranks_on_this_host) {
    log_message(LogLevel::Info, "rank {}: PLEXUS_FI_NICS={} not used: every rank is on this host "
                "(it chooses the NICs between hosts)", rank, *wanted);
    return PLX_SUCCESS;
  }
  std::set<std::string> names;
  for (size_t start = 0; start <= wanted->size();) {
    const size_t comma = std::min(wanted->find(',', start), wanted->size());
    if (comma > start) names.insert(wanted->substr(start, comma - start));
    start = comma + 1;
  }
  fi_info* kept = nullptr;
  fi_info** tail = &kept;
  std::string offered;
  for (fi_info* info = list->release(); info != nullptr;) {
    fi_info* next = info->next;
    info->next = nullptr;
    const char* domain = info->domain_attr ? info->domain_attr->name : nullptr;
    if (domain != nullptr && offered.find(fmt::format(" {},", domain)) == std::string::npos) {
      offered += fmt::format(" {},", domain);
    }
    if (domain != nullptr && names.count(domain) != 0) {
      *tail = info;
      tail = &info->next;
    } else {
      fi_freeinfo(info);
    }
    info = next;
  }
  list->reset(kept);
  if (kept == nullptr) {
    if (!offered.empty()) offered.pop_back();
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("rank {}: PLEXUS_FI_NICS={} names no NIC of the provider (it "
                                 "offers:{})", rank, *wanted, offered.empty() ? " none" : offered));
  }
  *restricted = true;
  return PLX_SUCCESS;
}

// fi_getinfo for one provider name; on failure returns the libfabric error code.
int get_info(const std::string& provider, InfoPtr* out) {
  InfoPtr hints = make_hints(provider);
  fi_info* list = nullptr;
  const int ret = fi_getinfo(api_version(), nullptr, nullptr, 0, hints.get(), &list);
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

plx_result_t choose_provider(int rank, const RankLocality& where,
                             bool all_ranks_on_this_host, bool shm_ok_everywhere, InfoPtr* out);

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

InfoPtr hmem_variant(const fi_info& chosen, std::string* why) {
  std::string ignored;
  if (why == nullptr) why = &ignored;
  if ((chosen.caps & FI_HMEM) != 0) return InfoPtr(fi_dupinfo(&chosen));
  const char* provider = chosen.fabric_attr ? chosen.fabric_attr->prov_name : nullptr;
  if (provider == nullptr) {
    *why = "the entry names no provider";
    return nullptr;
  }
  const char* domain = chosen.domain_attr ? chosen.domain_attr->name : nullptr;
  InfoPtr hints = make_hints(provider);
  hints->caps |= FI_HMEM;
  hints->domain_attr->mr_mode |= FI_MR_HMEM;
  hints->addr_format = chosen.addr_format;
  if (domain != nullptr) hints->domain_attr->name = strdup(domain);
  fi_info* list = nullptr;
  if (const int ret = fi_getinfo(api_version(), nullptr, nullptr, 0, hints.get(), &list);
      ret != 0) {
    *why = fmt::format("fi_getinfo with FI_HMEM: provider {} offers no such entry: {} ({})",
                       provider, fi_strerror(-ret), ret);
    return nullptr;
  }
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
  if (match == nullptr) {
    *why = fmt::format("provider {} offers FI_HMEM on no entry of domain {}", provider,
                       domain != nullptr ? domain : "?");
    return nullptr;
  }
  return InfoPtr(fi_dupinfo(match));
}

bool report_hmem_refused(const std::string& provider, bool gpu_visible, const std::string& why) {
  const bool loud = gpu_visible || provider.rfind("efa", 0) == 0;
  if (!loud) {
    log_message(LogLevel::Info, "provider {}: no FI_HMEM ({}); device buffers would be staged "
                "through host memory", provider, why);
    return false;
  }
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return false;
  log_message(LogLevel::Warn, "provider {}: no GPUDirect RDMA ({}): device buffers of "
              "plx_send/plx_recv are staged through host memory; PLEXUS_FI_HMEM=2 makes this an "
              "error", provider, why);
  return true;
}

plx_result_t select_provider(int rank, const RankLocality& where, bool gpu_visible,
                             bool all_ranks_on_this_host, bool shm_ok_everywhere, InfoPtr* out) {
  std::optional<int64_t> hmem;
  if (config_integer("PLEXUS_FI_HMEM", 0, 2, &hmem) != PLX_SUCCESS) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("rank {}: {}", rank, last_error()));
  }
  InfoPtr chosen;
  PLX_CHECK(choose_provider(rank, where, all_ranks_on_this_host, shm_ok_everywhere, &chosen));
  const char* provider = chosen->fabric_attr->prov_name;
  const int64_t mode = hmem.value_or(1);
  std::string refused;
  InfoPtr with_hmem = mode == 0 ? nullptr : hmem_variant(*chosen, &refused);
  const std::string cost = with_hmem ? host_cost(*with_hmem, *chosen) : std::string();
  if (mode == 0) {
    log_message(LogLevel::Info, "provider {}: FI_HMEM not asked for (PLEXUS_FI_HMEM=0)",
                provider);
  } else if (!with_hmem && mode == 2) {
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("rank {}: PLEXUS_FI_HMEM=2 demands FI_HMEM (device buffers "
                                 "straight to the provider, GPUDirect RDMA), refused: {}",
                                 rank, refused));
  } else if (!with_hmem) {
    report_hmem_refused(provider, gpu_visible, refused);
  } else if (mode == 1 && !cost.empty()) {
    log_message(LogLevel::Info, "provider {}: its FI_HMEM entry offers host messages less ({}); "
                "not used (PLEXUS_FI_HMEM=2 uses it)", provider, cost);
  } else {
    log_message(LogLevel::Info, "provider {}: with FI_HMEM (device buffers of plx_send/plx_recv "
                "go to the provider){}", provider, cost.empty() ? "" : "; host messages: " + cost);
    // With the default, the plain entry is opened should the FI_HMEM one fail to open (an efa
    // NIC without GPUDirect RDMA refuses FI_OPT_CUDA_API_PERMITTED, endpoint.cpp); 2 fails then.
    if (mode == 1) with_hmem->next = chosen.release();
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
plx_result_t choose_provider(int rank, const RankLocality& where,
                             bool all_ranks_on_this_host, bool shm_ok_everywhere, InfoPtr* out) {
  if (auto forced = config_string("PLEXUS_FI_PROVIDER")) {
    InfoPtr list;
    const int ret = get_info(*forced, &list);
    if (ret != 0) {
      return ofi_error(rank, "fi_getinfo", ret,
                       fmt::format("PLEXUS_FI_PROVIDER={} offers no tagged RDM endpoint", *forced));
    }
    bool restricted = false;
    PLX_CHECK(restrict_to_nics(rank, all_ranks_on_this_host, &list, &restricted));
    const bool efa = std::strncmp(list->fabric_attr->prov_name, "efa", 3) == 0;
    *out = efa || restricted ? pick_nic(list.get(), rank, where)
                             : pick_entry(list.get(), all_ranks_on_this_host);
    log_message(LogLevel::Info, "provider {} on {} (PLEXUS_FI_PROVIDER={})",
                (*out)->fabric_attr->prov_name,
                (*out)->domain_attr->name ? (*out)->domain_attr->name : "?", *forced);
    return PLX_SUCCESS;
  }

  InfoPtr list;
  if (get_info("efa", &list) == 0) {
    bool restricted = false;
    PLX_CHECK(restrict_to_nics(rank, all_ranks_on_this_host, &list, &restricted));
    *out = pick_nic(list.get(), rank, where);
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
  bool restricted = false;
  PLX_CHECK(restrict_to_nics(rank, all_ranks_on_this_host, &list, &restricted));
  *out = restricted ? pick_nic(list.get(), rank, where)
                    : pick_entry(list.get(), all_ranks_on_this_host);
  log_message(LogLevel::Info, "provider {} on {}", (*out)->fabric_attr->prov_name,
              (*out)->domain_attr->name ? (*out)->domain_attr->name : "?");
  return PLX_SUCCESS;
}

}  // namespace

}  // namespace plexus::comm::ofi
