// group_ranks on the layouts of issue 7 (2x2, 2x3, 3x2 hosts x ranks), an uneven 3 + 2 and an
// interleaved host order; path_class on every kind of pair; fill_hosts on the example files.
#include "topology/rank_groups.h"

#include <gtest/gtest.h>

#include "topology/rank_fill.h"
#include "topology/topology_file.h"

namespace plexus::topology {
namespace {

using Ranks = std::vector<int>;
using Groups = std::vector<Ranks>;

// Ranks placed on hosts "h<k>" by `hosts[r]`, NUMA node `numa[r]` (kNoNuma if numa is empty).
std::vector<RankLocation> placed(const std::vector<int>& hosts, const std::vector<int>& numa = {}) {
  std::vector<RankLocation> ranks;
  for (size_t r = 0; r < hosts.size(); ++r)
    ranks.push_back(
        {std::string("h").append(std::to_string(hosts[r])), numa.empty() ? kNoNuma : numa[r], ""});
  return ranks;
}

// Hosts of K x M ranks, host-major: rank r on host r / M.
std::vector<int> blocks(int k, int m) {
  std::vector<int> hosts;
  for (int r = 0; r < k * m; ++r) hosts.push_back(r / m);
  return hosts;
}

// The closed form for host-major K x M: host h holds ranks hM..hM+M-1, rail l holds l, M+l, ...
void expect_blocks(int k, int m) {
  SCOPED_TRACE(std::to_string(k) + " hosts x " + std::to_string(m) + " ranks");
  RankGroups g = group_ranks(placed(blocks(k, m)));
  ASSERT_EQ(g.size(), k * m);
  ASSERT_EQ(g.hosts.size(), static_cast<size_t>(k));
  ASSERT_EQ(g.rails.size(), static_cast<size_t>(m));
  EXPECT_TRUE(g.uniform());
  for (int h = 0; h < k; ++h) {
    EXPECT_EQ(g.host_ids[h], std::string("h").append(std::to_string(h)));
    for (int l = 0; l < m; ++l) EXPECT_EQ(g.hosts[h][l], h * m + l);
  }
  for (int l = 0; l < m; ++l)
    for (int h = 0; h < k; ++h) EXPECT_EQ(g.rails[l][h], h * m + l);
  for (int r = 0; r < k * m; ++r) {
    EXPECT_EQ(g.host_of[r], r / m) << "rank " << r;
    EXPECT_EQ(g.local_rank[r], r % m) << "rank " << r;
    EXPECT_EQ(g.local_size[r], m) << "rank " << r;
    EXPECT_EQ(g.numa_domain_of[r], -1) << "rank " << r;
  }
  EXPECT_TRUE(g.numa_domains.empty());
}

TEST(GroupRanks, TwoByTwo) { expect_blocks(2, 2); }
TEST(GroupRanks, TwoByThree) { expect_blocks(2, 3); }
TEST(GroupRanks, ThreeByTwo) { expect_blocks(3, 2); }
TEST(GroupRanks, OneRankAndNone) {
  expect_blocks(1, 1);
  RankGroups g = group_ranks({});
  EXPECT_EQ(g.size(), 0);
  EXPECT_TRUE(g.hosts.empty());
  EXPECT_TRUE(g.rails.empty());
}

TEST(GroupRanks, UnevenThreePlusTwo) {
  RankGroups g = group_ranks(placed({0, 0, 0, 1, 1}));
  EXPECT_EQ(g.hosts, (Groups{{0, 1, 2}, {3, 4}}));
  EXPECT_EQ(g.rails, (Groups{{0, 3}, {1, 4}, {2}}));
  EXPECT_EQ(g.local_rank, (Ranks{0, 1, 2, 0, 1}));
  EXPECT_EQ(g.local_size, (Ranks{3, 3, 3, 2, 2}));
  EXPECT_FALSE(g.uniform());
}

TEST(GroupRanks, InterleavedHostsKeepOrderOfFirstRank) {
  // Hosts B A B A B: host B comes first because rank 0 is on it.
  RankGroups g = group_ranks(placed({1, 0, 1, 0, 1}));
  EXPECT_EQ(g.host_ids, (std::vector<std::string>{"h1", "h0"}));
  EXPECT_EQ(g.hosts, (Groups{{0, 2, 4}, {1, 3}}));
  EXPECT_EQ(g.host_of, (Ranks{0, 1, 0, 1, 0}));
  EXPECT_EQ(g.local_rank, (Ranks{0, 0, 1, 1, 2}));
  EXPECT_EQ(g.local_size, (Ranks{3, 2, 3, 2, 3}));
  EXPECT_EQ(g.rails, (Groups{{0, 1}, {2, 3}, {4}}));
}

TEST(GroupRanks, NumaDomainsPerHostAndNode) {
  // Two hosts with NUMA nodes 0 0 1 and 1 0 -; rank 5's node is unknown.
  RankGroups g = group_ranks(placed({0, 0, 0, 1, 1, 1}, {0, 0, 1, 1, 0, kNoNuma}));
  EXPECT_EQ(g.numa_domains, (Groups{{0, 1}, {2}, {3}, {4}}));
  EXPECT_EQ(g.numa_domain_of, (Ranks{0, 0, 1, 2, 3, -1}));
}

TEST(PathClass, NearestToFarthest) {
  EXPECT_LT(PathClass::NvLink, PathClass::SameNuma);
  EXPECT_LT(PathClass::SameNuma, PathClass::SameHost);
  EXPECT_LT(PathClass::SameHost, PathClass::Network);
}

TEST(PathClass, EveryKindOfPair) {
  HostTopology host;
  host.numa_nodes = {{0, kNoNuma, 1, 1, 1, ""}, {1, kNoNuma, 1, 1, 1, ""}};
  host.gpus = {{"a", "0000:01:00.0", 0, 0, {}, {{NvLinkRemote::Gpu, "0000:02:00.0", 4, 3}}},
               {"b", "0000:02:00.0", 0, 0, {}, {}},
               {"c", "0000:03:00.0", 1, 0, {}, {}}};
  RankLocation a{"h", 0, "0000:01:00.0"}, b{"h", 0, "0000:02:00.0"}, c{"h", 0, "0000:03:00.0"};
  RankLocation cpu0{"h", 0, ""}, cpu1{"h", 1, ""}, unbound{"h", kNoNuma, ""}, far{"g", 0, ""};
  EXPECT_EQ(path_class(a, b, &host), PathClass::NvLink);
  EXPECT_EQ(path_class(b, a, &host), PathClass::NvLink);  // the link is listed on one side only
  EXPECT_EQ(path_class(a, b, nullptr), PathClass::SameNuma);
  EXPECT_EQ(path_class(a, c, &host), PathClass::SameNuma);
  EXPECT_EQ(path_class(cpu0, cpu1, &host), PathClass::SameHost);
  EXPECT_EQ(path_class(unbound, unbound, &host), PathClass::SameHost);
  EXPECT_EQ(path_class(cpu0, far, &host), PathClass::Network);
  RankLocation b_far{"g", 0, "0000:02:00.0"};
  EXPECT_EQ(path_class(a, b_far, &host), PathClass::Network);
  EXPECT_EQ(to_string(PathClass::SameNuma), "same-numa");
}

TEST(FillHosts, P5ClusterOneRankPerGpu) {
  ClusterTopology cluster;
  std::string error;
  ASSERT_EQ(read_topology_file(std::string(PLEXUS_TOPO_EXAMPLES_DIR) + "/p5.48xlarge-x128.json",
                               &cluster, &error),
            PLX_SUCCESS)
      << error;
  std::vector<RankLocation> ranks;
  ASSERT_EQ(fill_hosts(cluster, 20, 8, &ranks, &error), PLX_SUCCESS) << error;
  ASSERT_EQ(ranks.size(), 20u);
  EXPECT_EQ(ranks[9], (RankLocation{"p5-1", 0, "0000:60:00.0"}));
  EXPECT_EQ(ranks[15], (RankLocation{"p5-1", 1, "0000:c0:00.0"}));
  EXPECT_EQ(ranks[19], (RankLocation{"p5-2", 0, "0000:80:00.0"}));
  RankGroups g = group_ranks(ranks);
  EXPECT_EQ(g.hosts,
            (Groups{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11, 12, 13, 14, 15}, {16, 17, 18, 19}}));
  EXPECT_EQ(g.rails[0], (Ranks{0, 8, 16}));
  EXPECT_EQ(g.rails[7], (Ranks{7, 15}));
  EXPECT_EQ(g.numa_domains.size(), 5u);
  EXPECT_EQ(path_class(ranks[0], ranks[7], &cluster.hosts[0]), PathClass::NvLink);
  EXPECT_EQ(path_class(ranks[0], ranks[8], &cluster.hosts[0]), PathClass::Network);

  EXPECT_EQ(fill_hosts(cluster, 1025, 8, &ranks, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "fill_hosts: 1025 ranks at 8 per host need 129 hosts; the topology has 128");
  EXPECT_EQ(fill_hosts(cluster, 0, 8, &ranks, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "fill_hosts: nranks 0 is not at least 1");
  EXPECT_EQ(fill_hosts(cluster, 4, 0, &ranks, &error), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(error, "fill_hosts: per_host 0 is not at least 1");
}

TEST(FillHosts, WithoutGpusRanksSplitOverNumaNodesInBlocks) {
  ClusterTopology cluster;
  cluster.hosts.resize(1);
  cluster.hosts[0].host_id = "x";
  cluster.hosts[0].numa_nodes = {{0, kNoNuma, 1, 1, 1, ""}, {2, kNoNuma, 1, 1, 1, ""}};
  std::vector<RankLocation> ranks;
  std::string error;
  ASSERT_EQ(fill_hosts(cluster, 3, 4, &ranks, &error), PLX_SUCCESS) << error;
  EXPECT_EQ(ranks, (std::vector<RankLocation>{{"x", 0, ""}, {"x", 0, ""}, {"x", 2, ""}}));
}

}  // namespace
}  // namespace plexus::topology
