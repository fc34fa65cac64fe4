// fabric.cpp - fi_fabric + fi_domain.
#include "comm/transport/ofi/fabric.h"

#include "comm/base/error.h"

namespace plexus::comm::ofi {

plx_result_t Fabric::open(InfoPtr info, int rank, std::unique_ptr<Fabric>* out) {
  auto fabric = std::make_unique<Fabric>();
  fabric->provider_name_ = info->fabric_attr->prov_name ? info->fabric_attr->prov_name : "?";
  fid_fabric* raw_fabric = nullptr;
  int ret = fi_fabric(info->fabric_attr, &raw_fabric, nullptr);
  if (ret != 0) return ofi_error(rank, "fi_fabric", ret, fabric->provider_name_);
  fabric->fabric_.reset(raw_fabric);
  fid_domain* raw_domain = nullptr;
  ret = fi_domain(raw_fabric, info.get(), &raw_domain, nullptr);
  if (ret != 0) return ofi_error(rank, "fi_domain", ret, fabric->provider_name_);
  fabric->domain_.reset(raw_domain);
  fabric->info_ = std::move(info);
  *out = std::move(fabric);
  return PLX_SUCCESS;
}

}  // namespace plexus::comm::ofi
