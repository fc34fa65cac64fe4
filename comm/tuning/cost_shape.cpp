// cost_shape.cpp - see cost_shape.h.
#include "comm/tuning/cost_shape.h"

#include <algorithm>

#include "comm/algorithms/double_binary_tree.h"

namespace plexus::comm {
namespace {

// The busiest host link of one step in which rank r sends to dest[r] (-1: nothing): the most
// messages that leave one host, or enter one, between hosts.
int load_of(const HostLayout& layout, const std::vector<int>& dest) {
  std::vector<int> out(layout.host_count(), 0), in(layout.host_count(), 0);
  for (int r = 0; r < layout.size(); ++r) {
    const int d = dest[r];
    if (d < 0 || layout.host_of[d] == layout.host_of[r]) continue;
    ++out[layout.host_of[r]];
    ++in[layout.host_of[d]];
  }
  int load = 0;
  for (int h = 0; h < layout.host_count(); ++h) load = std::max({load, out[h], in[h]});
  return load;
}

// The double binary tree's height, degree and children (CostShape), from the parents the
// algorithm itself uses (double_binary_tree.h). O(n log n): the trees are O(log n) deep.
void set_double_tree(int n, CostShape* shape) {
  std::vector<int> degree(n, 0), children(n, 0);
  int height = 0;
  for (int r = 0; r < n; ++r) {
    for (int tree = 0; tree < 2; ++tree) {
      const auto parent = [&](int x) {
        return tree == 0 ? btree_parent(n, x) : second_tree_parent(n, x);
      };
      const int up = parent(r);
      if (up < 0) continue;
      ++degree[r];
      ++degree[up];
      ++children[up];
      int depth = 1;
      for (int x = up; parent(x) >= 0 && depth <= n; x = parent(x)) ++depth;
      height = std::max(height, depth);
    }
  }
  shape->double_tree_height = height;
  shape->double_tree_degree = n > 0 ? *std::max_element(degree.begin(), degree.end()) : 0;
  shape->double_tree_children = n > 0 ? *std::max_element(children.begin(), children.end()) : 0;
}

int floor_pow2(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace

CostShape flat_cost_shape(int nranks) {
  CostShape shape;
  shape.nranks = std::max(nranks, 1);
  shape.max_local = shape.min_local = shape.root_host_ranks = shape.nranks;
  shape.local_sizes = {shape.nranks};
  set_double_tree(shape.nranks, &shape);
  return shape;
}

CostShape cost_shape(const HostLayout& layout) {
  const int n = layout.size();
  if (layout.host_count() <= 1) return flat_cost_shape(n);
  CostShape shape;
  shape.nranks = n;
  shape.hosts = layout.host_count();
  shape.max_local = layout.max_local();
  shape.min_local = layout.min_local();
  for (const std::vector<int>& ranks : layout.hosts) {
    shape.local_sizes.push_back(static_cast<int>(ranks.size()));
  }
  std::sort(shape.local_sizes.begin(), shape.local_sizes.end());
  shape.local_sizes.erase(std::unique(shape.local_sizes.begin(), shape.local_sizes.end()),
                          shape.local_sizes.end());
  shape.root_host_ranks = layout.local_size(0);

  std::vector<int> dest(n, -1);
  const auto pattern = [&](auto&& to) {
    for (int r = 0; r < n; ++r) dest[r] = to(r);
    return load_of(layout, dest);
  };
  shape.ring = pattern([&](int r) { return (r + 1) % n; });

  // Recursive halving and doubling: the fold, then p2 survivors in real-rank order
  // (block_exchange.h's allreduce fold: odd r < 2 rem folds into r-1).
  const int p2 = floor_pow2(n), rem = n - p2;
  shape.fold = pattern([&](int r) { return r < 2 * rem && r % 2 == 1 ? r - 1 : -1; });
  std::vector<int> survivors;
  for (int r = 0; r < n; ++r) {
    if (!(r < 2 * rem && r % 2 == 1)) survivors.push_back(r);
  }
  for (int d = 1; d < p2; d *= 2) {
    std::fill(dest.begin(), dest.end(), -1);
    for (int v = 0; v < p2; ++v) dest[survivors[v]] = survivors[v ^ d];
    shape.halving.push_back(load_of(layout, dest));
  }
  for (int d = 1; d < n; d *= 2) {
    shape.binomial.push_back(pattern([&](int v) { return v % (2 * d) == d ? v - d : -1; }));
    shape.doubling.push_back(pattern([&](int r) { return (r + d) % n; }));
  }

  shape.pairwise.assign(shape.max_local + 1, 0);
  if (n > kPairwiseExactRanks) {
    shape.pairwise[shape.max_local] = n - 1;
  } else {
    for (int s = 1; s < n; ++s) ++shape.pairwise[pattern([&](int r) { return (r + s) % n; })];
  }

  // Double binary tree: in steady state every edge of both trees carries one slice each way
  // per pipeline step (up from the child, down from the parent), so each edge between hosts
  // puts one message on each of its two hosts' links per step, in each direction: a host's
  // load is the number of tree edges it has to other hosts.
  set_double_tree(n, &shape);
  std::vector<int> edges(shape.hosts, 0);
  for (int r = 0; r < n; ++r) {
    for (const int parent : {btree_parent(n, r), second_tree_parent(n, r)}) {
      if (parent < 0 || layout.host_of[parent] == layout.host_of[r]) continue;
      ++edges[layout.host_of[r]];
      ++edges[layout.host_of[parent]];
    }
  }
  shape.double_tree = *std::max_element(edges.begin(), edges.end());
  return shape;
}

int nics_in_use(const HostLayout& layout, const std::vector<std::string>& nic_of_rank) {
  if (nic_of_rank.size() != static_cast<size_t>(layout.size()) || layout.host_count() == 0) {
    return 1;
  }
  int fewest = 0;
  for (const std::vector<int>& ranks : layout.hosts) {
    std::vector<std::string> names;
    for (int r : ranks) {
      if (nic_of_rank[static_cast<size_t>(r)].empty()) return 1;
      names.push_back(nic_of_rank[static_cast<size_t>(r)]);
    }
    std::sort(names.begin(), names.end());
    const int distinct =
        static_cast<int>(std::unique(names.begin(), names.end()) - names.begin());
    fewest = fewest == 0 ? distinct : std::min(fewest, distinct);
  }
  return std::max(fewest, 1);
}

}  // namespace plexus::comm
