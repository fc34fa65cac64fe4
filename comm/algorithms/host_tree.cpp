// host_tree.cpp - see host_tree.h.
#include "comm/algorithms/host_tree.h"

#include <cstddef>

namespace plexus::comm {
namespace {

// Links seq[0..s) as a chain or as binomial_tree.h's tree over relative ranks v = 0..s-1, rooted
// at seq[0]; children are appended in send order (largest subtree first).
void link(const std::vector<int>& seq, LeaderShape shape, HostTree* tree) {
  const size_t s = seq.size();
  if (shape == LeaderShape::Chain) {
    for (size_t v = 1; v < s; ++v) {
      tree->parent[seq[v]] = seq[v - 1];
      tree->children[seq[v - 1]].push_back(seq[v]);
    }
    return;
  }
  size_t top = 1;
  while (top < s) top <<= 1;
  for (size_t v = 0; v < s; ++v) {
    const size_t low = v == 0 ? top : (v & (~v + 1));
    if (v != 0) tree->parent[seq[v]] = seq[v - low];
    for (size_t bit = low >> 1; bit > 0; bit >>= 1) {
      if (v + bit < s) tree->children[seq[v]].push_back(seq[v + bit]);
    }
  }
}

}  // namespace

HostTree host_tree(const HostLayout& layout, int root, LeaderShape leaders) {
  HostTree tree;
  tree.parent.assign(layout.size(), -1);
  tree.children.assign(layout.size(), {});
  const int hosts = layout.host_count();
  const int lane = layout.local_rank[root];
  const int first = layout.host_of[root];
  std::vector<int> leader_seq;
  for (int k = 0; k < hosts; ++k) leader_seq.push_back(layout.proxy((first + k) % hosts, lane));
  link(leader_seq, leaders, &tree);  // first, so the next leader is every leader's first child
  for (int g = 0; g < hosts; ++g) {
    const std::vector<int>& ranks = layout.hosts[g];
    const size_t start = static_cast<size_t>(lane) % ranks.size();
    std::vector<int> seq;
    for (size_t k = 0; k < ranks.size(); ++k) seq.push_back(ranks[(start + k) % ranks.size()]);
    link(seq, LeaderShape::Binomial, &tree);
  }
  return tree;
}

}  // namespace plexus::comm
