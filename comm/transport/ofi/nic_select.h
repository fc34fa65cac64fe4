// nic_select.h - which of a host's NICs a rank's endpoint opens, by PCI locality.
//
// A provider such as efa offers one fi_info domain per NIC: 4 on p4d.24xlarge, 32 on
// p5.48xlarge. Were every rank to open the first, all the local ranks would share one NIC (at
// most 100 of 400 or 3200 Gbit/s). As aws-ofi-nccl does, each rank takes the NICs nearest its
// GPU:
//   1. A rank with a GPU (its current CUDA device, whose PCI bus id the host topology lists):
//      every NIC belongs to the GPU nearest it - on the same NUMA node when both are known, then
//      by PCI address distance (domain, bus, device, function; the bus numbers of a PCIe switch's
//      devices are adjacent). The rank takes the NICs of its GPU. The GPUs that own none take
//      one each, in host order, the least used and then the nearest, so that they spread. p5:
//      each GPU owns the 4 NICs behind its switch; p4d: the 2 GPUs of a switch share its NIC.
//   2. A rank without a GPU (a CPU job) or whose GPU the topology lacks: the local ranks split
//      the NICs, in PCI order (then by name), into even blocks: with N NICs and L local ranks, local rank r takes
//      NICs [r*N/L, (r+1)*N/L) when N >= L, else NIC r*N/L (so each NIC serves L/N ranks, and
//      ranks bound in order to NUMA nodes get the NICs in the same order).
// The first NIC of the choice is the one the rank's endpoint opens; the others are as near (its
// GPU's other NICs), where large messages may be striped.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <string>
#include <vector>

#include "topology/host_topology.h"

namespace plexus::comm::ofi {

// One NIC a provider offers: an fi_info domain.
struct NicCandidate {
  std::string domain;      // domain_attr->name ("rdmap79s0-rdm", "efa_0-rdm")
  std::string pci_bus_id;  // normalized ("0000:4f:00.0"); "" when the entry carries no PCI address
  int numa_node = topology::kNoNuma;
};

// Where the rank runs.
struct RankLocality {
  int local_rank = 0;
  int local_size = 1;
  std::string gpu_pci_bus_id;  // its GPU, any spelling normalize_pci_bus_id takes; "" for none
};

struct NicChoice {
  std::vector<size_t> nics;  // indices into the candidates; [0] is opened; empty iff none given
  std::string reason;        // for the log: "nearest GPU 0000:4f:00.0: 4 NICs", ...
};

// One candidate per distinct domain of `list`, in list order, with its PCI address from the
// entry's fi_nic (bus_attr of type FI_BUS_PCI) and no NUMA node.
std::vector<NicCandidate> nic_candidates(const fi_info* list);

// The choice above. `host` gives the GPUs (their PCI bus ids and NUMA nodes) and the NUMA node
// of a candidate whose bus id it lists (a candidate's own numa_node wins when known); an empty
// host topology leaves rule 2. Never fails.
NicChoice choose_nics(const std::vector<NicCandidate>& nics, const RankLocality& rank,
                      const topology::HostTopology& host);

}  // namespace plexus::comm::ofi
