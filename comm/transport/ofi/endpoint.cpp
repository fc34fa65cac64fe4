// endpoint.cpp - fi_endpoint, fi_av_open, binding, fi_getname, fi_av_insert.
#include "comm/transport/ofi/endpoint.h"

#include <fmt/format.h>
#include <rdma/fi_cm.h>

#include <chrono>
#include <thread>

#include "comm/base/error.h"
#include "comm/transport/ofi/shm_names.h"

namespace plexus::comm::ofi {

plx_result_t Endpoint::open(const Fabric& fabric, const CompletionQueue& cq, int rank,
                            std::unique_ptr<Endpoint>* out) {
  auto endpoint = std::make_unique<Endpoint>();
  endpoint->rank_ = rank;
  fi_av_attr av_attr = {};
  av_attr.type = FI_AV_TABLE;
  fid_av* av = nullptr;
  int ret = fi_av_open(fabric.domain(), &av_attr, &av, nullptr);
  if (ret != 0) return ofi_error(rank, "fi_av_open", ret);
  endpoint->av_.reset(av);

  // fi_enable binds the endpoint's listening socket (tcp) to a port the kernel picks; under
  // load from many loopback connections that bind can fail with EADDRINUSE for a moment, so a
  // fresh endpoint is tried a few more times before giving up.
  constexpr int kEnableAttempts = 5;
  fid_ep* ep = nullptr;
  for (int attempt = 1;; ++attempt) {
    endpoint->ep_.reset();
    ret = fi_endpoint(fabric.domain(), const_cast<fi_info*>(&fabric.info()), &ep, nullptr);
    if (ret != 0) return ofi_error(rank, "fi_endpoint", ret, fabric.provider_name());
    endpoint->ep_.reset(ep);
    ret = fi_ep_bind(ep, &cq.cq()->fid, FI_TRANSMIT | FI_RECV);
    if (ret != 0) return ofi_error(rank, "fi_ep_bind(cq)", ret);
    ret = fi_ep_bind(ep, &av->fid, 0);
    if (ret != 0) return ofi_error(rank, "fi_ep_bind(av)", ret);
    if (fabric.provider_name() == "shm") {
      // Our own unique region name, not libfabric's pid-based one (see shm_names.h).
      const std::string name = unique_shm_region_name();
      ret = fi_setname(&ep->fid, const_cast<char*>(name.c_str()), name.size() + 1);
      if (ret != 0) return ofi_error(rank, "fi_setname", ret, name);
    }
    ret = fi_enable(ep);
    if (ret == 0) break;
    if (ret != -FI_EADDRINUSE || attempt == kEnableAttempts) {
      return ofi_error(rank, "fi_enable", ret);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20 * attempt));
  }

  size_t length = 0;
  ret = fi_getname(&ep->fid, nullptr, &length);
  if (ret != 0 && ret != -FI_ETOOSMALL) return ofi_error(rank, "fi_getname", ret);
  endpoint->name_.resize(length);
  ret = fi_getname(&ep->fid, endpoint->name_.data(), &length);
  if (ret != 0) return ofi_error(rank, "fi_getname", ret);
  endpoint->name_.resize(length);
  *out = std::move(endpoint);
  return PLX_SUCCESS;
}

plx_result_t Endpoint::insert_peers(const std::vector<std::vector<uint8_t>>& names) {
  peers_.assign(names.size(), FI_ADDR_UNSPEC);
  for (size_t r = 0; r < names.size(); ++r) {
    if (names[r].empty()) {
      return set_error(PLX_ERROR_INTERNAL,
                       fmt::format("rank {}: empty endpoint address for rank {}", rank_, r));
    }
    // One at a time: each rank's name may have its own length.
    const int inserted = fi_av_insert(av_.get(), names[r].data(), 1, &peers_[r], 0, nullptr);
    if (inserted != 1) {
      return ofi_error(rank_, "fi_av_insert", inserted < 0 ? inserted : -FI_EINVAL,
                       fmt::format("address of rank {}", r));
    }
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::ofi
