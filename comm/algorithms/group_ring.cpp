// group_ring.cpp - see group_ring.h.
#include "comm/algorithms/group_ring.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/ring.h"
#include "comm/algorithms/slices.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 2;
// Reduce-scatter: a slot holds receive u until its sum has gone out as message u+1
// (ring_reduce_scatter.cpp explains the count).
constexpr size_t kSlots = kRecvDepth + kSendDepth + 1;
constexpr size_t kGatherRecvDepth = 4;

// Slice k of a part: `count` elements at `offset` in piece `piece`.
struct SliceRef {
  size_t piece = 0;
  size_t offset = 0;
  size_t count = 0;
};

struct SlicedParts {
  std::vector<std::vector<SliceRef>> parts;  // per part, its slices in order
  size_t slices = 1;                         // S: the most slices of any part (>= 1)
  size_t slice_elems = 1;                    // the widest slice
};

size_t slices_in(const Part& part, size_t slice_elems) {
  size_t total = 0;
  for (const Piece& piece : part) total += slices_of(piece.count, slice_elems);
  return total;
}

// Cuts every piece into slices of at most chunk_bytes (never across pieces), widened until the
// S * steps messages fit the window.
plx_result_t slice_parts(const RingGroup& group, size_t elem, size_t chunk_bytes,
                         const TagWindow& window, int rank, SlicedParts* out) {
  const size_t steps = group.members.size() - 1;
  size_t largest = 1;
  for (const Part& part : group.parts) {
    for (const Piece& piece : part) largest = std::max(largest, piece.count);
  }
  size_t slice = std::clamp<size_t>(chunk_bytes / std::max<size_t>(elem, 1), 1, largest);
  size_t slices = 1;
  for (;;) {
    slices = 1;
    for (const Part& part : group.parts) slices = std::max(slices, slices_in(part, slice));
    if (slices * steps <= window.size) break;
    if (slice == largest) {
      return set_error(PLX_ERROR_INTERNAL,
                       fmt::format("group ring: rank {}: {} slices of {} steps exceed the {} "
                                   "message indices of the window",
                                   rank, slices, steps, window.size));
    }
    slice = std::min(largest, slice * 2);
  }
  out->slices = slices;
  out->slice_elems = slice;
  out->parts.assign(group.parts.size(), {});
  for (size_t p = 0; p < group.parts.size(); ++p) {
    for (size_t i = 0; i < group.parts[p].size(); ++i) {
      const size_t count = group.parts[p][i].count;
      for (size_t off = 0; off < count; off += slice) {
        out->parts[p].push_back({i, off, std::min(slice, count - off)});
      }
    }
  }
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t group_reduce_scatter(Transport& transport, const TagWindow& window,
                                  const RingGroup& group, plx_datatype_t datatype,
                                  plx_red_op_t op, size_t divisor, size_t chunk_bytes) {
  const size_t n = group.members.size();
  const size_t elem = datatype_bytes(datatype);
  const bool divide = op == PLX_AVG && divisor > 0;
  if (n == 1) {
    for (const Piece& piece : group.parts[0]) {
      if (piece.in != piece.out) std::memcpy(piece.out, piece.in, piece.count * elem);
      if (divide) divide_by(piece.out, piece.count, datatype, divisor);
    }
    return PLX_SUCCESS;
  }
  SlicedParts sliced;
  PLX_CHECK(slice_parts(group, elem, chunk_bytes, window, transport.rank(), &sliced));
  const size_t steps = n - 1;
  const size_t messages = sliced.slices * steps;
  const Ring ring{n, group.me, (group.me + n - 1) % n};  // part me ends here
  const int next = group.members[ring.next()], prev = group.members[ring.prev()];
  Pipeline pipe(transport, kSendDepth, kSlots, sliced.slice_elems * elem);

  // Slice k of part p, or nullptr when part p has fewer slices (an empty message).
  const auto slice = [&](size_t p, size_t k) -> const SliceRef* {
    return k < sliced.parts[p].size() ? &sliced.parts[p][k] : nullptr;
  };
  const auto bytes = [&](const SliceRef* s) { return s ? s->count * elem : 0; };
  const auto own = [&](size_t p, const SliceRef& s) {  // this rank's contribution
    return group.parts[p][s.piece].in + s.offset * elem;
  };

  const auto post_recv = [&](size_t u) {
    const SliceRef* s = slice(ring.recv_block(u % steps), u / steps);
    return pipe.post_recv(prev, window.tag(u), pipe.staging(u), bytes(s));
  };
  // send: step 0 sends this rank's own contribution; every later step forwards receive m-1.
  const auto send = [&](size_t m) {
    const size_t t = m % steps, p = ring.send_block(t);
    const SliceRef* s = slice(p, m / steps);
    const unsigned char* src = t > 0 ? pipe.staging(m - 1) : s ? own(p, *s) : pipe.staging(m);
    return pipe.send(next, window.tag(m), src, bytes(s));
  };
  const auto use = [&](size_t u) {
    const size_t t = u % steps, p = ring.recv_block(t);
    const SliceRef* s = slice(p, u / steps);
    if (s == nullptr) return PLX_SUCCESS;
    if (t < steps - 1) {  // recv_reduce_send: the slot becomes send u+1
      reduce_into(pipe.staging(u), own(p, *s), s->count, datatype, op);
    } else {  // recv_reduce_copy: part me is final
      unsigned char* dst = group.parts[p][s->piece].out + s->offset * elem;
      reduce_copy(dst, own(p, *s), pipe.staging(u), s->count, datatype, op);
      if (divide) divide_by(dst, s->count, datatype, divisor);
    }
    return PLX_SUCCESS;
  };
  return pipe.run({.recvs = messages,
                   .sends = messages,
                   .recv_ahead = kRecvDepth,
                   .post_recv = post_recv,
                   .post_send = send,
                   .ready = [&](size_t m, size_t used) { return m % steps == 0 || m <= used; },
                   .use = use});
}

plx_result_t group_allgather(Transport& transport, const TagWindow& window,
                             const RingGroup& group, plx_datatype_t datatype,
                             size_t chunk_bytes) {
  const size_t n = group.members.size();
  if (n == 1) return PLX_SUCCESS;
  const size_t elem = datatype_bytes(datatype);
  SlicedParts sliced;
  PLX_CHECK(slice_parts(group, elem, chunk_bytes, window, transport.rank(), &sliced));
  const size_t steps = n - 1;
  const size_t messages = sliced.slices * steps;
  const Ring ring{n, group.me, group.me};  // step t sends part (me - t) mod n
  const int next = group.members[ring.next()], prev = group.members[ring.prev()];
  Pipeline pipe(transport, kSendDepth, kGatherRecvDepth, 0);
  unsigned char empty = 0;  // where empty slices point: nothing is read or written there

  // Slice k of part p in place (recvbuf), and its length in bytes; empty beyond the part's end.
  const auto at = [&](size_t p, size_t k, size_t* len) -> unsigned char* {
    if (k >= sliced.parts[p].size()) {
      *len = 0;
      return &empty;
    }
    const SliceRef& s = sliced.parts[p][k];
    *len = s.count * elem;
    return group.parts[p][s.piece].out + s.offset * elem;
  };
  // recv_copy_send and recv: each slice lands in place, where the next send reads it.
  const auto post_recv = [&](size_t u) {
    size_t len = 0;
    unsigned char* dst = at(ring.recv_block(u % steps), u / steps, &len);
    return pipe.post_recv(prev, window.tag(u), dst, len);
  };
  const auto send = [&](size_t m) {
    size_t len = 0;
    const unsigned char* src = at(ring.send_block(m % steps), m / steps, &len);
    return pipe.send(next, window.tag(m), src, len);
  };
  return pipe.run({.recvs = messages,
                   .sends = messages,
                   .recv_ahead = kGatherRecvDepth,
                   .post_recv = post_recv,
                   .post_send = send,
                   .ready = [&](size_t m, size_t used) { return m % steps == 0 || m <= used; }});
}

}  // namespace plexus::comm
