// nic_select_test.cpp - which NIC each rank opens (comm/transport/ofi/nic_select.h), on synthetic
// efa-like fi_info lists built from the example topologies (topology/examples: p4d.24xlarge with
// 4 EFA NICs, p5.48xlarge with 32), since no EFA device is at hand.
//
//   nic_candidates   one candidate per domain, with the PCI address of the entry's fi_nic; an
//                    entry without one has none.
//   GPU ranks        p4d: the 2 GPUs behind a PCIe switch share its NIC, each NIC serves 2 of
//                    the 8 ranks; p5: each GPU takes the 4 NICs behind its switch, nearest first,
//                    and the 8 ranks use all 32 NICs once.
//   CPU ranks        even blocks by local rank (8 ranks on 4 NICs: 2 per NIC; 8 on 32: 4 each,
//                    disjoint; 2 on 4: 2 each), and the same when the rank's GPU is not in the
//                    topology or a NIC has no PCI address.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "comm/transport/ofi/nic_select.h"
#include "comm/transport/ofi/ofi_util.h"
#include "topology/pci_bus_id.h"
#include "topology/topology_file.h"

namespace plexus::test {
namespace {

using comm::ofi::choose_nics;
using comm::ofi::NicCandidate;
using comm::ofi::NicChoice;
using comm::ofi::RankLocality;

const std::string kExamples = PLEXUS_TOPO_EXAMPLES_DIR;

topology::HostTopology example_host(const std::string& name) {
  topology::ClusterTopology cluster;
  std::string error;
  EXPECT_EQ(topology::read_topology_file(kExamples + "/" + name, &cluster, &error), PLX_SUCCESS)
      << error;
  EXPECT_FALSE(cluster.hosts.empty());
  return cluster.hosts.empty() ? topology::HostTopology{} : cluster.hosts.front();
}

// An efa-like fi_info list: one RDM entry per NIC of `host`, domain "<name>-rdm", with an fi_nic
// carrying the NIC's PCI address (the fi_nic objects belong to the list object, not to libfabric:
// they are detached before fi_freeinfo).
class SyntheticEfaList {
 public:
  explicit SyntheticEfaList(const topology::HostTopology& host, bool with_pci = true) {
    nics_.resize(host.nics.size());
    buses_.resize(host.nics.size());
    fi_info* previous = nullptr;
    for (size_t i = 0; i < host.nics.size(); ++i) {
      fi_info* info = fi_allocinfo();
      info->fabric_attr->prov_name = strdup("efa");
      info->domain_attr->name = strdup((host.nics[i].name + "-rdm").c_str());
      unsigned domain = 0, bus = 0, device = 0, function = 0;
      EXPECT_EQ(std::sscanf(host.nics[i].pci_bus_id.c_str(), "%x:%x:%x.%x", &domain, &bus,
                            &device, &function),
                4);
      buses_[i].bus_type = FI_BUS_PCI;
      buses_[i].attr.pci = {static_cast<uint16_t>(domain), static_cast<uint8_t>(bus),
                            static_cast<uint8_t>(device), static_cast<uint8_t>(function)};
      nics_[i].bus_attr = &buses_[i];
      if (with_pci) info->nic = &nics_[i];
      (previous != nullptr ? previous->next : head_) = info;
      previous = info;
    }
  }
  ~SyntheticEfaList() {
    for (fi_info* info = head_; info != nullptr; info = info->next) info->nic = nullptr;
    fi_freeinfo(head_);
  }
  const fi_info* get() const { return head_; }

 private:
  fi_info* head_ = nullptr;
  std::vector<fid_nic> nics_;
  std::vector<fi_bus_attr> buses_;
};

// Every rank's choice for a host with one rank per GPU (gpus = true) or `ranks` CPU ranks.
std::vector<NicChoice> choices(const topology::HostTopology& host, int ranks, bool gpus,
                               std::vector<NicCandidate>* candidates_out = nullptr) {
  SyntheticEfaList list(host);
  const std::vector<NicCandidate> candidates = comm::ofi::nic_candidates(list.get());
  std::vector<NicChoice> out;
  for (int r = 0; r < ranks; ++r) {
    RankLocality rank{r, ranks, gpus ? host.gpus[static_cast<size_t>(r)].pci_bus_id : ""};
    out.push_back(choose_nics(candidates, rank, host));
  }
  if (candidates_out != nullptr) *candidates_out = candidates;
  return out;
}

// The bus number of a bus id "dddd:bb:dd.f".
unsigned bus_of(const std::string& bus_id) { return std::stoul(bus_id.substr(5, 2), nullptr, 16); }

TEST(NicSelect, CandidatesAreTheDomainsWithTheirPciAddresses) {
  const topology::HostTopology host = example_host("p4d.24xlarge.json");
  SyntheticEfaList list(host);
  const std::vector<NicCandidate> nics = comm::ofi::nic_candidates(list.get());
  ASSERT_EQ(nics.size(), 4u);
  EXPECT_EQ(nics[0].domain, "efa_0-rdm");
  EXPECT_EQ(nics[0].pci_bus_id, "0000:10:1b.0");
  EXPECT_EQ(nics[3].domain, "efa_3-rdm");
  EXPECT_EQ(nics[3].pci_bus_id, "0000:a0:1b.0");
  EXPECT_EQ(nics[0].numa_node, topology::kNoNuma);  // fi_nic carries none

  SyntheticEfaList bare(host, /*with_pci=*/false);
  const std::vector<NicCandidate> unknown = comm::ofi::nic_candidates(bare.get());
  ASSERT_EQ(unknown.size(), 4u);
  EXPECT_EQ(unknown[2].pci_bus_id, "");
}

TEST(NicSelect, CandidatesCountEachDomainOnce) {
  const topology::HostTopology host = example_host("p4d.24xlarge.json");
  SyntheticEfaList list(host);
  // A second entry of the first domain (as efa lists one per endpoint type or address format).
  fi_info* tail = const_cast<fi_info*>(list.get());
  while (tail->next != nullptr) tail = tail->next;
  tail->next = fi_allocinfo();
  tail->next->domain_attr->name = strdup("efa_0-rdm");
  const std::vector<NicCandidate> nics = comm::ofi::nic_candidates(list.get());
  ASSERT_EQ(nics.size(), 4u);
  EXPECT_EQ(nics[0].pci_bus_id, "0000:10:1b.0");  // the first entry's
}

TEST(NicSelect, P4dTwoGpusShareTheNicOfTheirSwitch) {
  const topology::HostTopology host = example_host("p4d.24xlarge.json");
  ASSERT_EQ(host.gpus.size(), 8u);
  std::vector<NicCandidate> nics;
  const std::vector<NicChoice> chosen = choices(host, 8, true, &nics);
  std::map<size_t, int> ranks_per_nic;
  for (size_t r = 0; r < chosen.size(); ++r) {
    ASSERT_EQ(chosen[r].nics.size(), 1u) << "rank " << r << ": " << chosen[r].reason;
    const NicCandidate& nic = nics[chosen[r].nics[0]];
    EXPECT_EQ(bus_of(nic.pci_bus_id), bus_of(host.gpus[r].pci_bus_id))
        << "rank " << r << " GPU " << host.gpus[r].pci_bus_id << " got " << nic.pci_bus_id;
    ++ranks_per_nic[chosen[r].nics[0]];
  }
  ASSERT_EQ(ranks_per_nic.size(), 4u);
  for (const auto& [nic, count] : ranks_per_nic) EXPECT_EQ(count, 2) << nics[nic].domain;
}

TEST(NicSelect, P5EachGpuTakesTheFourNicsBehindItsSwitch) {
  const topology::HostTopology host = example_host("p5.48xlarge.json");
  ASSERT_EQ(host.gpus.size(), 8u);
  ASSERT_EQ(host.nics.size(), 32u);
  std::vector<NicCandidate> nics;
  const std::vector<NicChoice> chosen = choices(host, 8, true, &nics);
  std::set<size_t> used;
  for (size_t r = 0; r < chosen.size(); ++r) {
    ASSERT_EQ(chosen[r].nics.size(), 4u) << "rank " << r << ": " << chosen[r].reason;
    const unsigned gpu_bus = bus_of(host.gpus[r].pci_bus_id);
    unsigned previous = 0;
    for (size_t k = 0; k < 4; ++k) {
      const unsigned nic_bus = bus_of(nics[chosen[r].nics[k]].pci_bus_id);
      // Behind the GPU's switch: the 4 buses after the GPU's, the nearest first.
      EXPECT_GT(nic_bus, gpu_bus) << "rank " << r;
      EXPECT_LE(nic_bus, gpu_bus + 4) << "rank " << r;
      EXPECT_GT(nic_bus, previous) << "rank " << r << ": not nearest first";
      previous = nic_bus;
      EXPECT_TRUE(used.insert(chosen[r].nics[k]).second) << "NIC used twice";
    }
  }
  EXPECT_EQ(used.size(), 32u);  // every rail carries one rank's traffic
}

// GPUs that own no NIC (here the 4 of the second PCI domain, all 4 NICs being in the first)
// spread over the NICs instead of all taking the one nearest their side.
TEST(NicSelect, GpusWithoutANicOfTheirOwnSpread) {
  topology::HostTopology host;
  std::vector<NicCandidate> nics;
  for (int i = 0; i < 4; ++i) {
    host.gpus.push_back({"", topology::format_pci_bus_id(0, 0x10 + 0x10 * i, 0, 0), 0, 0, {}, {}});
    host.gpus.push_back({"", topology::format_pci_bus_id(1, 0x10 + 0x10 * i, 0, 0), 1, 0, {}, {}});
    nics.push_back({"nic" + std::to_string(i), topology::format_pci_bus_id(0, 0x11 + 0x10 * i, 0, 0),
                    0});
  }
  std::sort(host.gpus.begin(), host.gpus.end(),
            [](const topology::Gpu& a, const topology::Gpu& b) { return a.pci_bus_id < b.pci_bus_id; });
  std::map<size_t, int> gpus_per_nic;
  for (size_t r = 0; r < host.gpus.size(); ++r) {
    const NicChoice choice =
        choose_nics(nics, RankLocality{static_cast<int>(r), 8, host.gpus[r].pci_bus_id}, host);
    ASSERT_EQ(choice.nics.size(), 1u) << choice.reason;
    ++gpus_per_nic[choice.nics[0]];
    if (r < 4) {  // a GPU of the first domain keeps its own NIC
      EXPECT_EQ(choice.nics[0], r) << "GPU " << host.gpus[r].pci_bus_id;
    }
  }
  ASSERT_EQ(gpus_per_nic.size(), 4u);
  for (const auto& [nic, count] : gpus_per_nic) EXPECT_EQ(count, 2) << nics[nic].domain;
}

TEST(NicSelect, CpuRanksSpreadEvenly) {
  const topology::HostTopology p4d = example_host("p4d.24xlarge.json");
  const topology::HostTopology p5 = example_host("p5.48xlarge.json");
  struct Case {
    const topology::HostTopology* host;
    int ranks;
    size_t nics_each;
    int ranks_per_nic;
  };
  for (const Case& c : {Case{&p4d, 8, 1, 2}, Case{&p4d, 2, 2, 1}, Case{&p4d, 4, 1, 1},
                        Case{&p5, 8, 4, 1}, Case{&p5, 32, 1, 1}, Case{&p5, 64, 1, 2}}) {
    std::vector<NicCandidate> nics;
    const std::vector<NicChoice> chosen = choices(*c.host, c.ranks, false, &nics);
    std::map<size_t, int> ranks_per_nic;
    for (int r = 0; r < c.ranks; ++r) {
      EXPECT_EQ(chosen[r].nics.size(), c.nics_each) << c.ranks << " ranks, rank " << r;
      for (size_t nic : chosen[r].nics) ++ranks_per_nic[nic];
    }
    EXPECT_EQ(ranks_per_nic.size(), nics.size()) << c.ranks << " ranks: a NIC left idle";
    for (const auto& [nic, count] : ranks_per_nic) {
      EXPECT_EQ(count, c.ranks_per_nic) << c.ranks << " ranks, " << nics[nic].domain;
    }
    // Blocks in PCI order: local rank 0 takes the first NIC.
    EXPECT_EQ(nics[chosen[0].nics[0]].pci_bus_id, c.host->nics.front().pci_bus_id);
  }
}

TEST(NicSelect, AnUnknownGpuOrNicFallsBackToTheSpread) {
  const topology::HostTopology host = example_host("p5.48xlarge.json");
  SyntheticEfaList list(host);
  const std::vector<NicCandidate> nics = comm::ofi::nic_candidates(list.get());
  const NicChoice unknown_gpu = choose_nics(nics, RankLocality{1, 8, "0000:ee:00.0"}, host);
  ASSERT_EQ(unknown_gpu.nics.size(), 4u);
  EXPECT_EQ(unknown_gpu.nics[0], 4u);  // block 1 of 8 in PCI order
  EXPECT_NE(unknown_gpu.reason.find("not in the host topology"), std::string::npos)
      << unknown_gpu.reason;

  std::vector<NicCandidate> without_pci = nics;
  without_pci[5].pci_bus_id.clear();
  const NicChoice no_pci =
      choose_nics(without_pci, RankLocality{0, 8, host.gpus[0].pci_bus_id}, host);
  EXPECT_EQ(no_pci.nics.size(), 4u);
  EXPECT_NE(no_pci.reason.find("without a PCI address"), std::string::npos) << no_pci.reason;

  // A GPU in NVML's spelling is the same GPU.
  const NicChoice nvml = choose_nics(nics, RankLocality{0, 8, "00000000:4F:00.0"}, host);
  ASSERT_EQ(nvml.nics.size(), 4u);
  EXPECT_EQ(nics[nvml.nics[0]].pci_bus_id, "0000:50:00.0");
}

TEST(NicSelect, OneOrNoNic) {
  const topology::HostTopology host = example_host("p4d.24xlarge.json");
  EXPECT_TRUE(choose_nics({}, RankLocality{}, host).nics.empty());
  const NicChoice one = choose_nics({NicCandidate{"efa_0-rdm", "", topology::kNoNuma}},
                                    RankLocality{3, 8, ""}, host);
  ASSERT_EQ(one.nics.size(), 1u);
  EXPECT_EQ(one.nics[0], 0u);
}

}  // namespace
}  // namespace plexus::test
