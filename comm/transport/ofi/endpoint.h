// endpoint.h - one reliable-datagram endpoint (FI_EP_RDM) and its address vector.
//
// The endpoint is bound to a completion queue for sends and receives and to a table address
// vector (FI_AV_TABLE), so after insert_peers() the fi_addr_t of rank r is simply peer(r).
#pragma once

#include <rdma/fi_endpoint.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/transport/ofi/completion_queue.h"
#include "comm/transport/ofi/fabric.h"

namespace plexus::comm::ofi {

class Endpoint {
 public:
  static plx_result_t open(const Fabric& fabric, const CompletionQueue& cq, int rank,
                           std::unique_ptr<Endpoint>* out);

  fid_ep* ep() const { return ep_.get(); }
  // This endpoint's address (fi_getname), to give to the peers.
  const std::vector<uint8_t>& name() const { return name_; }

  // Inserts every rank's address (index = rank). Afterwards peer(r) addresses rank r.
  plx_result_t insert_peers(const std::vector<std::vector<uint8_t>>& names);
  fi_addr_t peer(int rank) const { return peers_[static_cast<size_t>(rank)]; }

 private:
  int rank_ = 0;
  // The endpoint closes before the address vector it is bound to.
  FidPtr<fid_av> av_;
  FidPtr<fid_ep> ep_;
  std::vector<uint8_t> name_;
  std::vector<fi_addr_t> peers_;
};

}  // namespace plexus::comm::ofi
