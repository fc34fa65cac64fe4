// block_exchange.cpp - see block_exchange.h.
#include "comm/algorithms/block_exchange.h"

#include <cstdint>

#include "comm/algorithms/pipeline.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"
#include "comm/transport/tag.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 2;

bool overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

size_t exchange_slice_elems(size_t chunk_bytes, size_t elem_bytes, size_t max_phase_elems,
                            size_t phases) {
  size_t slice = std::max<size_t>(1, chunk_bytes / std::max<size_t>(1, elem_bytes));
  const size_t max_slices = kTagIndexLimit / std::max<size_t>(1, phases);
  slice = std::max(slice, slices_of(max_phase_elems, max_slices));
  return std::max<size_t>(1, std::min(slice, max_phase_elems));  // no slot beyond a message
}

plx_result_t exchange(Transport& transport, const ExchangeStep& step, const ExchangeFormat& fmt) {
  const size_t elem = datatype_bytes(fmt.datatype);
  const size_t slice = fmt.slice_elems;
  const size_t sends = slices_of(step.send_count, slice);
  const size_t recvs = slices_of(step.recv_count, slice);
  const bool combine = step.mine != nullptr;
  const auto* src = static_cast<const unsigned char*>(step.send);
  auto* dst = static_cast<unsigned char*>(step.recv);
  const auto* mine = static_cast<const unsigned char*>(step.mine);
  // Sending the very range that is being combined into: one send in flight, so that posting
  // send k+1 has retired send k before slice k is overwritten.
  const bool aliased =
      sends > 0 && recvs > 0 && overlap(src, step.send_count * elem, dst, step.recv_count * elem);
  Pipeline pipe(transport, aliased ? 1 : kSendDepth, kRecvDepth, combine ? slice * elem : 0);

  const auto slice_count = [&](size_t k, size_t total) {
    return std::min(slice, total - k * slice);
  };
  const auto post_recv = [&](size_t k) -> plx_result_t {
    if (k >= recvs) return PLX_SUCCESS;
    void* into = combine ? static_cast<void*>(pipe.staging(k)) : dst + k * slice * elem;
    return pipe.post_recv(step.peer, step.first_tag + k, into,
                          slice_count(k, step.recv_count) * elem);
  };
  // Posts every send numbered <= last (waiting for window room if needed), then later ones while
  // the window has room.
  size_t posted = 0;
  const auto post_sends = [&](size_t last) -> plx_result_t {
    while (posted < sends) {
      if (posted > last) {
        bool room = false;
        PLX_CHECK(pipe.send_has_room(&room));
        if (!room) break;
      }
      PLX_CHECK(pipe.send(step.peer, step.first_tag + posted, src + posted * slice * elem,
                          slice_count(posted, step.send_count) * elem));
      ++posted;
    }
    return PLX_SUCCESS;
  };

  for (size_t k = 0; k < std::min(kRecvDepth, recvs); ++k) PLX_CHECK(post_recv(k));
  for (size_t k = 0; k < recvs; ++k) {
    PLX_CHECK(post_sends(aliased ? k + 1 : k));
    PLX_CHECK(pipe.wait_recv());
    if (combine) {
      if (aliased && k + 1 >= sends) PLX_CHECK(pipe.finish());  // the last send, slice k
      const size_t off = k * slice * elem, len = slice_count(k, step.recv_count);
      const unsigned char* got = pipe.staging(k);
      if (step.mine_first) {
        reduce_copy(dst + off, mine + off, got, len, fmt.datatype, fmt.op);
      } else {
        reduce_copy(dst + off, got, mine + off, len, fmt.datatype, fmt.op);
      }
    }
    PLX_CHECK(post_recv(k + kRecvDepth));
  }
  PLX_CHECK(post_sends(sends));
  return pipe.finish();
}

}  // namespace plexus::comm
