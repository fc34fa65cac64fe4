// endpoint.cpp - fi_endpoint, fi_av_open, binding, fi_getname, fi_av_insert.
#include "comm/transport/ofi/endpoint.h"

#include <fmt/format.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>

#include <chrono>
#include <thread>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/transport/ofi/shm_names.h"

namespace plexus::comm::ofi {

namespace {

// Endpoint options of libfabric 1.18 and 1.19, after FI_OPT_XPU_TRIGGER in the FI_OPT_ENDPOINT
// enum (rdma/fi_endpoint.h); Debian 12's 1.17 headers lack them, and a 1.17 library answers
// -FI_ENOPROTOOPT.
constexpr int kOptCudaApiPermitted = FI_OPT_XPU_TRIGGER + 1;       // bool, libfabric 1.18
constexpr int kOptSharedMemoryPermitted = FI_OPT_XPU_TRIGGER + 2;  // bool, libfabric 1.19

// The efa provider's two switches, set before fi_enable as aws-ofi-nccl does:
//  - on an FI_HMEM endpoint, FI_OPT_CUDA_API_PERMITTED = false: device buffers must then move
//    by device RDMA (GPUDirect), never through CUDA calls of the provider's. An efa NIC without
//    GPUDirect RDMA answers -FI_EOPNOTSUPP: the endpoint fails to open, so that the transport
//    opens the plain entry instead (or fails with PLEXUS_FI_HMEM=2, provider_select.h);
//  - FI_OPT_SHARED_MEMORY_PERMITTED: efa's offload of messages between ranks of one host to its
//    shm provider, on for plain endpoints; off on FI_HMEM ones, where shm would need the CUDA
//    calls just refused (Plexus moves device buffers within a host by CUDA IPC itself).
// -FI_ENOPROTOOPT (a library older than the option) leaves the provider's default.
plx_result_t set_efa_options(const Fabric& fabric, fid_ep* ep, int rank) {
  if (fabric.provider_name().rfind("efa", 0) != 0) return PLX_SUCCESS;
  const bool hmem = (fabric.info().caps & FI_HMEM) != 0;
  if (hmem) {
    bool permitted = false;
    const int ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, kOptCudaApiPermitted, &permitted,
                              sizeof permitted);
    if (ret == -FI_EOPNOTSUPP) {
      return set_error(PLX_ERROR_UNSUPPORTED,
                       fmt::format("rank {}: fi_setopt(FI_OPT_CUDA_API_PERMITTED=false) failed: {} "
                                   "({}): this efa NIC has no GPUDirect RDMA (device RDMA), the "
                                   "provider would have to copy device buffers with CUDA calls",
                                   rank, fi_strerror(FI_EOPNOTSUPP), ret));
    }
    if (ret != 0 && ret != -FI_ENOPROTOOPT) {
      return ofi_error(rank, "fi_setopt(FI_OPT_CUDA_API_PERMITTED=false)", ret);
    }
  }
  bool shm = !hmem;
  const int ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, kOptSharedMemoryPermitted, &shm,
                            sizeof shm);
  if (ret != 0 && ret != -FI_ENOPROTOOPT) {
    log_message(LogLevel::Info, "rank {}: efa: FI_OPT_SHARED_MEMORY_PERMITTED={} refused: {} ({})",
                rank, shm, fi_strerror(-ret), ret);
  }
  return PLX_SUCCESS;
}

}  // namespace

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
    PLX_CHECK(set_efa_options(fabric, ep, rank));
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
