// slices.h - how the pipelined algorithms cut a vector: into near-equal blocks, and each message
// into slices of at most chunk_bytes.
//
// Blocks: count elements in `parts` blocks, the first count % parts of them one element longer,
// some empty when count < parts. The segments of the rings, the blocks of Rabenseifner's halving
// and of van de Geijn's scatter.
//
//   count 10, parts 4:   [ 0 1 2 ][ 3 4 5 ][ 6 7 ][ 8 9 ]
//
// Slices: an algorithm of up to `rounds` rounds tags slice k of round q as tag_base | (q * S + k),
// S being the most slices a round has. slice_elems_for() picks slices of at most chunk_bytes,
// widened where needed so that every index stays below kTagIndexLimit (comm/transport/tag.h).
// SlicedBlocks cuts every block into the same S slices, so a short block's last slices are empty.
#pragma once

#include <algorithm>
#include <cstddef>

#include "comm/transport/tag.h"

namespace plexus::comm {

struct Blocks {
  size_t count;
  size_t parts;

  size_t begin(size_t b) const { return b * (count / parts) + std::min(b, count % parts); }
  size_t size(size_t b) const { return begin(b + 1) - begin(b); }
  // Elements of the blocks [first, last).
  size_t span(size_t first, size_t last) const { return begin(last) - begin(first); }
  size_t largest() const { return (count + parts - 1) / parts; }
};

// Number of slices of at most slice_elems (>= 1) in `elems` elements.
constexpr size_t slices_of(size_t elems, size_t slice_elems) {
  return (elems + slice_elems - 1) / slice_elems;
}

// Slice size, in elements, for up to `rounds` rounds of at most max_elems elements each: at most
// chunk_bytes worth, and wide enough that rounds * slices stays within kTagIndexLimit; never more
// than max_elems (no staging slot beyond a message), never 0.
inline size_t slice_elems_for(size_t chunk_bytes, size_t elem_bytes, size_t max_elems,
                              size_t rounds) {
  size_t slice = std::max<size_t>(1, chunk_bytes / std::max<size_t>(1, elem_bytes));
  const size_t max_slices = kTagIndexLimit / std::max<size_t>(1, rounds);
  slice = std::max(slice, slices_of(max_elems, max_slices));
  return std::max<size_t>(1, std::min(slice, max_elems));
}

// Blocks, each cut into the same number of slices of slice_elems (the largest block sets it).
struct SlicedBlocks {
  Blocks blocks;
  size_t slice_elems;  // >= 1
  size_t slices;       // S, per block, >= 1

  SlicedBlocks(const Blocks& b, size_t slice)
      : blocks(b), slice_elems(slice), slices(std::max<size_t>(1, slices_of(b.largest(), slice))) {}
  // count elements in `parts` blocks, sliced for `rounds` rounds of one block each.
  SlicedBlocks(size_t count, size_t parts, size_t elem_bytes, size_t chunk_bytes, size_t rounds)
      : SlicedBlocks(
            Blocks{count, parts},
            slice_elems_for(chunk_bytes, elem_bytes, Blocks{count, parts}.largest(), rounds)) {}

  // Slice k of block b is the elements [slice_begin, slice_begin + slice_count).
  size_t slice_begin(size_t b, size_t k) const {
    return blocks.begin(b) + std::min(blocks.size(b), k * slice_elems);
  }
  size_t slice_count(size_t b, size_t k) const {
    const size_t size = blocks.size(b), lo = std::min(size, k * slice_elems);
    return std::min(size, lo + slice_elems) - lo;
  }
};

}  // namespace plexus::comm
