// binomial_tree.h - the binomial tree of MPICH's broadcast, reduce, gather and scatter
// (R. Thakur, R. Rabenseifner and W. Gropp, "Optimization of collective communication operations
// in MPICH", IJHPCA 19(1), 2005), in ranks relative to the root: v = (rank - root) mod n.
//
// The parent of v is v minus its lowest set bit; the children of v are v + 2^j for every 2^j
// below that bit (below n at the root), and the subtree of v is the ranks [v, v + extent(v)).
// In round j every v whose lowest set bit is 2^j talks to its parent. n = 7:
//
//                 0                  extent(0) = 7   extent(4) = 3   extent(2) = 2
//         +-------+---+---+          extent of 1, 3, 5, 6 = 1
//         4       2       1
//       +-+-+     |                  round 0: 1-0, 3-2, 5-4    round 1: 2-0, 6-4
//       6   5     3                  round 2: 4-0
//
// Used by broadcast.cpp, binomial_reduce.cpp, binomial_gather.cpp, binomial_scatter.cpp and
// scatter_allgather_broadcast.cpp. Gather and scatter keep a subtree's blocks contiguous, in
// relative order: the root's block for child c starts at real block root + c, and at most one
// child's run of blocks wraps past real block n-1 (wrapping_child()).
#pragma once

#include <algorithm>
#include <cstddef>

namespace plexus::comm {

struct BinomialTree {
  size_t n;
  size_t root;  // real rank of v = 0
  size_t v;     // this rank, relative to the root

  BinomialTree(int size, int root_rank, int rank)
      : n(static_cast<size_t>(size)),
        root(static_cast<size_t>(root_rank)),
        v((static_cast<size_t>(rank) + n - root) % n) {}

  // The lowest set bit of w (w's parent is w - lowbit(w)), or at the root the first power of two
  // >= n (every bit below it may lead to a child).
  size_t lowbit(size_t w) const {
    if (w != 0) return w & (~w + 1);
    size_t top = 1;
    while (top < n) top <<= 1;
    return top;
  }
  // Ranks in w's subtree: [w, w + extent(w)).
  size_t extent(size_t w) const { return w == 0 ? n : std::min(lowbit(w), n - w); }
  // The real rank of relative rank w.
  int real(size_t w) const { return static_cast<int>((w + root) % n); }
  // This rank's parent (not at the root).
  int parent() const { return real(v - lowbit(v)); }
  // This rank's children are v + bit for every bit < mask() with v + bit < n.
  size_t mask() const { return lowbit(v); }
  size_t children() const {
    size_t count = 0;
    for (size_t bit = 1; bit < mask(); bit <<= 1) count += v + bit < n ? 1 : 0;
    return count;
  }
  bool leaf() const { return v != 0 && children() == 0; }
  // At the root: the child c whose blocks, real blocks root+c onwards, run past block n-1, or 0
  // when none does. Its first wrap_head(c) blocks end at real block n-1; the rest start at 0.
  size_t wrapping_child() const {
    size_t wrap = 0;
    for (size_t bit = 1; bit < n; bit <<= 1) {
      if (root + bit < n && root + bit + extent(bit) > n) wrap = bit;
    }
    return wrap;
  }
  size_t wrap_head(size_t c) const { return n - (root + c); }
};

}  // namespace plexus::comm
