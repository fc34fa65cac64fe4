// unique_id_server.cpp - process-owned rendezvous servers behind plx_get_unique_id().
#include "comm/bootstrap/unique_id_server.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/bootstrap/job_key.h"
#include "comm/bootstrap/rendezvous_server.h"

namespace plexus::bootstrap {

namespace {

// Servers outlive the call that started them; the registry stops the survivors at exit.
class Registry {
 public:
  ~Registry() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& server : servers_) server->stop();
  }
  void add(std::unique_ptr<RendezvousServer> server) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::erase_if(servers_, [](const auto& s) { return s->finished(); });
    servers_.push_back(std::move(server));
  }

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<RendezvousServer>> servers_;
};

Registry& registry() {
  static Registry instance;
  return instance;
}

std::string first_non_loopback_ipv4() {
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (ifaddrs* it = list; it && found.empty(); it = it->ifa_next) {
    if (!it->ifa_addr || it->ifa_addr->sa_family != AF_INET) continue;
    if ((it->ifa_flags & IFF_UP) == 0 || (it->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* addr = reinterpret_cast<const sockaddr_in*>(it->ifa_addr);
    if (inet_ntop(AF_INET, &addr->sin_addr, text, sizeof(text))) found = text;
  }
  freeifaddrs(list);
  return found;
}

}  // namespace

plx_result_t start_unique_id_server(RendezvousAddress* out) {
  RendezvousAddress address;
  if (auto forced = config_string("PLEXUS_MASTER_ADDR")) address.host = *forced;
  if (address.host.empty()) address.host = first_non_loopback_ipv4();
  if (address.host.empty()) address.host = "127.0.0.1";
  if (address.host.size() > kMaxAddressChars) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("PLEXUS_MASTER_ADDR={} is longer than {} characters",
                                 address.host, kMaxAddressChars));
  }
  std::optional<int64_t> port;
  PLX_CHECK(config_integer("PLEXUS_MASTER_PORT", 1, 65535, &port));
  int timeout_ms = 0;
  PLX_CHECK(config_timeout_ms(&timeout_ms));
  JobKey key;
  PLX_CHECK(random_job_key(&key));
  address.key = key.bytes;
  std::unique_ptr<RendezvousServer> server;
  PLX_CHECK(RendezvousServer::start(address.host, static_cast<int>(port.value_or(0)), key.bytes,
                                    timeout_ms, &server));
  address.port = server->port();
  registry().add(std::move(server));
  *out = address;
  return PLX_SUCCESS;
}

}  // namespace plexus::bootstrap
