// double_binary_tree.h - the two trees of double_binary_tree_allreduce.cpp (NCCL's
// src/graph/trees.cc; Sanders, Speck & Traeff, Parallel Computing 35(12), 2009), as the parent of
// each rank; the two-level cost model (comm/tuning/cost_shape.cpp) counts their host crossings.
//
// Tree 0 is the in-order binary tree rooted at rank 0; tree 1 is tree 0 mirrored (r -> n-1-r) for
// even n, or shifted by one for odd n, so a leaf of one tree is interior in the other.
#pragma once

namespace plexus::comm {

// Parent of rank r in tree 0 of n ranks; -1 at the root.
inline int btree_parent(int n, int r) {
  if (r == 0) return -1;
  const int bit = r & -r;
  const int up = (r ^ bit) | (bit << 1);
  return up < n ? up : r ^ bit;
}

// Parent of rank r in tree 1 of n ranks; -1 at the root.
inline int second_tree_parent(int n, int r) {
  if (n % 2 == 0) {
    const int p = btree_parent(n, n - 1 - r);
    return p < 0 ? -1 : n - 1 - p;
  }
  const int p = btree_parent(n, (r - 1 + n) % n);
  return p < 0 ? -1 : (p + 1) % n;
}

}  // namespace plexus::comm
