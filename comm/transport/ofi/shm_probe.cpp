// shm_probe.cpp - does the shm provider really work in this process's environment?
//
// fi_getinfo can list shm where it cannot move data: its large-message path reads the peer's
// memory with process_vm_readv (CMA), which a container may forbid, and it needs room in
// /dev/shm. So before choosing shm automatically, one rank-of-one transport sends itself a
// small and a 1 MiB message and checks every byte. The verdict is cached per process.
#include <mutex>
#include <string>
#include <vector>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/transport/ofi/ofi_transport.h"
#include "comm/transport/ofi/provider_select.h"
#include "comm/transport/ofi/shm_names.h"

namespace plexus::comm::ofi {

namespace {

constexpr int kProbeTimeoutMs = 3000;

bool run_probe(std::string* why) {
  InfoPtr hints = make_hints("shm");
  fi_info* list = nullptr;
  const int ret = fi_getinfo(api_version(), nullptr, nullptr, 0, hints.get(), &list);
  if (ret != 0) {
    *why = std::string("fi_getinfo(shm) failed: ") + fi_strerror(-ret);
    return false;
  }
  InfoPtr info(list);
  auto async = std::make_shared<AsyncState>();
  std::unique_ptr<OfiTransport> transport;
  if (OfiTransport::open(std::move(info), 0, 1, kProbeTimeoutMs, 0, async, &transport) !=
          PLX_SUCCESS ||
      transport->connect({transport->local_address()}) != PLX_SUCCESS) {
    *why = last_error();
    return false;
  }
  for (size_t bytes : {size_t{8}, size_t{1} << 20}) {
    std::vector<unsigned char> sent(bytes), received(bytes, 0);
    for (size_t i = 0; i < bytes; ++i) sent[i] = static_cast<unsigned char>(i * 7 + 3);
    Request send_req, recv_req;
    Request* both[] = {&recv_req, &send_req};
    if (transport->post_recv(0, 1, received.data(), bytes, recv_req) != PLX_SUCCESS ||
        transport->post_send(0, 1, sent.data(), bytes, send_req) != PLX_SUCCESS ||
        transport->wait_all(both, 2) != PLX_SUCCESS) {
      *why = "self-test of " + std::to_string(bytes) + " bytes failed: " + last_error();
      return false;
    }
    if (received != sent) {
      *why = "self-test of " + std::to_string(bytes) + " bytes delivered wrong bytes";
      return false;
    }
  }
  return true;
}

}  // namespace

bool shm_works(std::string* why) {
  static std::once_flag once;
  static bool works = false;
  static std::string reason;
  std::call_once(once, [] {
    if (int stale = remove_stale_shm_regions(); stale > 0) {
      log_message(LogLevel::Info, "removed {} shm regions left by processes that are gone", stale);
    }
    works = run_probe(&reason);
    clear_error();  // the probe's own failures are not the caller's
    log_message(LogLevel::Info, "shm self-test: {}", works ? "passed" : reason);
  });
  if (!works) *why = reason;
  return works;
}

}  // namespace plexus::comm::ofi
