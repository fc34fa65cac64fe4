// shm_group.cpp - see shm_group.h.
#include "comm/algorithms/shm_group.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "comm/algorithms/shm_pieces.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

// How the parts share the slot (shm_group.h): per part its total, its share w and offset o.
struct Rounds {
  std::vector<size_t> total, width, offset;  // elements
  size_t count = 0;                          // rounds

  Rounds(const RingGroup& group, size_t slot_elems, size_t elem) {
    const size_t parts = group.parts.size();
    total.assign(parts, 0);
    width.assign(parts, 0);
    offset.assign(parts, 0);
    size_t sum = 0;
    for (size_t p = 0; p < parts; ++p) {
      for (const Piece& piece : group.parts[p]) total[p] += piece.count;
      sum += total[p];
    }
    if (sum == 0) return;
    const size_t align = std::max<size_t>(1, 64 / elem);
    const unsigned __int128 room = slot_elems - parts;  // shm_group_fits: slot_elems >= parts
    size_t at = 0;
    for (size_t p = 0; p < parts; ++p) {
      if (total[p] == 0) continue;
      size_t w = static_cast<size_t>(room * total[p] / sum) + 1;
      if (w >= align) w = w / align * align;
      width[p] = w;
      offset[p] = at;
      at += w;
      count = std::max(count, (total[p] + w - 1) / w);
    }
  }
  // Elements of part p in round k, from element begin(p, k) of its run.
  size_t begin(size_t p, size_t k) const { return std::min(total[p], k * width[p]); }
  size_t size(size_t p, size_t k) const { return std::min(total[p], begin(p, k) + width[p]) -
                                                begin(p, k); }
};

// Elements [begin, begin + count) of `part`, its pieces read one after the other, as runs
// within one piece each, in order: f(piece, first, len) for `len` elements from element `first`
// of `piece`.
template <typename F>
void for_each_run(const Part& part, size_t begin, size_t count, F f) {
  size_t at = 0;
  for (const Piece& piece : part) {
    if (count == 0) return;
    if (begin < at + piece.count) {
      const size_t first = begin - at;
      const size_t len = std::min(count, piece.count - first);
      f(piece, first, len);
      begin += len;
      count -= len;
    }
    at += piece.count;
  }
}

}  // namespace

bool shm_group_fits(const PeerMemory* peers, const RingGroup& group, plx_datatype_t datatype) {
  const size_t members = group.members.size();
  if (peers == nullptr || members < 2 || peers->size() != static_cast<int>(members) ||
      peers->rank() != static_cast<int>(group.me) || group.parts.size() != members ||
      peers->slot_bytes() / datatype_bytes(datatype) < members) {
    return false;
  }
  for (size_t p = 0; p < members; ++p) {
    if (peers->member_rank(static_cast<int>(p)) != group.members[p]) return false;
  }
  return true;
}

plx_result_t shm_group_reduce_scatter(PeerMemory& peers, const RingGroup& group,
                                      plx_datatype_t datatype, plx_red_op_t op, size_t divisor,
                                      const char* name, const IdleWork* idle) {
  const size_t elem = datatype_bytes(datatype);
  const int r = peers.rank();
  const Rounds rounds(group, peers.slot_bytes() / elem, elem);
  const uint32_t first_piece = peers.next_pieces(static_cast<uint32_t>(rounds.count));
  const Part& mine = group.parts[static_cast<size_t>(r)];
  for (size_t k = 0; k < rounds.count; ++k) {
    const uint32_t g = first_piece + static_cast<uint32_t>(k);
    if (idle && k > 0) PLX_CHECK((*idle)());
    // 1. stage every part but this member's
    PLX_CHECK(peers.wait_writable(g, name, idle));
    unsigned char* own = peers.slot(r, g);
    for (size_t p = 0; p < group.parts.size(); ++p) {
      if (static_cast<int>(p) == r) continue;
      unsigned char* to = own + rounds.offset[p] * elem;
      for_each_run(group.parts[p], rounds.begin(p, k), rounds.size(p, k),
                   [&](const Piece& piece, size_t first, size_t len) {
                     std::memcpy(to, piece.in + first * elem, len * elem);
                     to += len * elem;
                   });
    }
    peers.arrive(g);
    // 2. reduce this member's part of the round from its own input and every peer's slot
    PLX_CHECK(peers.wait_all_arrived(g, name, idle));
    size_t at = rounds.offset[r] * elem;
    for_each_run(mine, rounds.begin(r, k), rounds.size(r, k),
                 [&](const Piece& piece, size_t first, size_t len) {
                   reduce_with_peers(piece.out + first * elem, piece.in + first * elem, peers,
                                     g, at, len, datatype, op, divisor);
                   at += len * elem;
                 });
  }
  return PLX_SUCCESS;
}

plx_result_t shm_group_allgather(PeerMemory& peers, const RingGroup& group,
                                 plx_datatype_t datatype, const char* name,
                                 const IdleWork* idle) {
  const size_t elem = datatype_bytes(datatype);
  const int n = peers.size(), r = peers.rank();
  const Rounds rounds(group, peers.slot_bytes() / elem, elem);
  const uint32_t first_piece = peers.next_pieces(static_cast<uint32_t>(rounds.count));
  for (size_t k = 0; k < rounds.count; ++k) {
    const uint32_t g = first_piece + static_cast<uint32_t>(k);
    if (idle && k > 0) PLX_CHECK((*idle)());
    // 1. stage this member's part
    PLX_CHECK(peers.wait_writable(g, name, idle));
    unsigned char* to = peers.slot(r, g) + rounds.offset[r] * elem;
    for_each_run(group.parts[r], rounds.begin(r, k), rounds.size(r, k),
                 [&](const Piece& piece, size_t first, size_t len) {
                   std::memcpy(to, piece.out + first * elem, len * elem);
                   to += len * elem;
                 });
    peers.arrive(g);
    // 2. copy every peer's part out of its slot as soon as it is there
    for (int j = 1; j < n; ++j) {
      const int q = (r + j) % n;
      if (rounds.size(q, k) == 0) continue;
      PLX_CHECK(peers.wait_arrived(q, g, name, idle));
      const unsigned char* from = peers.slot(q, g) + rounds.offset[q] * elem;
      for_each_run(group.parts[q], rounds.begin(q, k), rounds.size(q, k),
                   [&](const Piece& piece, size_t first, size_t len) {
                     std::memcpy(piece.out + first * elem, from, len * elem);
                     from += len * elem;
                   });
    }
  }
  return PLX_SUCCESS;
}

plx_result_t host_reduce_scatter(Transport& transport, const TagWindow& window,
                                 const RingGroup& group, PeerMemory* peers,
                                 plx_datatype_t datatype, plx_red_op_t op, size_t divisor,
                                 size_t chunk_bytes, const char* name, const IdleWork* idle) {
  if (shm_group_fits(peers, group, datatype)) {
    return shm_group_reduce_scatter(*peers, group, datatype, op, divisor, name, idle);
  }
  return group_reduce_scatter(transport, window, group, datatype, op, divisor, chunk_bytes);
}

plx_result_t host_allgather(Transport& transport, const TagWindow& window, const RingGroup& group,
                            PeerMemory* peers, plx_datatype_t datatype, size_t chunk_bytes,
                            const char* name, const IdleWork* idle) {
  if (shm_group_fits(peers, group, datatype)) {
    return shm_group_allgather(*peers, group, datatype, name, idle);
  }
  return group_allgather(transport, window, group, datatype, chunk_bytes);
}

}  // namespace plexus::comm
