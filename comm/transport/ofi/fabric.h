// fabric.h - an opened libfabric fabric + domain for one chosen provider entry (fi_info).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <memory>
#include <string>

#include "comm/transport/ofi/ofi_util.h"

namespace plexus::comm::ofi {

class Fabric {
 public:
  // Opens the fabric and domain that `info` describes; takes ownership of `info`.
  static plx_result_t open(InfoPtr info, int rank, std::unique_ptr<Fabric>* out);

  const fi_info& info() const { return *info_; }
  fid_domain* domain() const { return domain_.get(); }
  // "tcp;ofi_rxm", "shm", "efa", ...
  const std::string& provider_name() const { return provider_name_; }
  // Largest message the endpoint accepts in one operation.
  size_t max_msg_bytes() const { return info_->ep_attr->max_msg_size; }

 private:
  InfoPtr info_;
  // Declared after info_ and in open order, so they close in reverse (domain, then fabric).
  FidPtr<fid_fabric> fabric_;
  FidPtr<fid_domain> domain_;
  std::string provider_name_;
};

}  // namespace plexus::comm::ofi
