// host_tree.h - the two-level tree of hierarchical_broadcast.cpp and hierarchical_reduce.cpp:
// the hosts' leaders on the root's lane, then a binomial tree inside each host.
//
// The leader of host g is proxy(g, lane(root)) (host_layout.h): the rank with the root's local
// rank, or local rank lane(root) mod L_g on a shorter host; the root leads its own host. Leaders
// are taken in host order starting at the root's host and linked either as a chain (many slices:
// every host link carries each slice once) or as a binomial tree (one slice: ceil(log2 K) hops).
// Inside host g, its ranks in local order starting at its leader form a binomial tree (MPICH's,
// binomial_tree.h) rooted at the leader; intra-host links are fast, so depth matters more there.
//
//   hosts A [0 1 2]  B [3 4]  C [5 6 7], root 1 (lane 1), chain of leaders:
//
//        1 ---------> 4 ---------> 6          leaders: 1 (A), 4 (B), 6 (C)
//       / \           |           / \         A in local order from 1: [1 2 0]
//      0   2          3          5   7        B from 4: [4 3];  C from 6: [6 7 5]
//
//   send order: 1 -> 4, 0, 2    4 -> 6, 3    6 -> 5, 7
//
// A rank's children are listed in send order: the next leader first (the slow link starts
// first), then its host's children, largest subtree first.
#pragma once

#include <vector>

#include "comm/algorithms/host_layout.h"

namespace plexus::comm {

enum class LeaderShape {
  Chain,     // leader k's parent is leader k-1
  Binomial,  // leader v's parent is leader v - lowbit(v)
};

struct HostTree {
  std::vector<int> parent;                 // per rank; -1 at the root
  std::vector<std::vector<int>> children;  // per rank, in send order
};

// The tree above for `root` (0 <= root < layout.size()).
HostTree host_tree(const HostLayout& layout, int root, LeaderShape leaders);

}  // namespace plexus::comm
