// block_exchange.cpp - see block_exchange.h.
#include "comm/algorithms/block_exchange.h"

#include <algorithm>
#include <cstdint>

#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 2;

bool overlap(const void* a, size_t a_bytes, const void* b, size_t b_bytes) {
  const auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
  return x < y + b_bytes && y < x + a_bytes;
}

}  // namespace

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
  const auto post_recv = [&](size_t k) {
    void* into = combine ? static_cast<void*>(pipe.staging(k)) : dst + k * slice * elem;
    return pipe.post_recv(step.peer, step.first_tag + k, into,
                          slice_count(k, step.recv_count) * elem);
  };
  const auto send = [&](size_t k) {
    return pipe.send(step.peer, step.first_tag + k, src + k * slice * elem,
                     slice_count(k, step.send_count) * elem);
  };
  const auto use = [&](size_t k) -> plx_result_t {
    if (!combine) return PLX_SUCCESS;
    if (aliased && k + 1 >= sends) PLX_CHECK(pipe.finish());  // the last send, slice k
    const size_t off = k * slice * elem, len = slice_count(k, step.recv_count);
    const unsigned char* got = pipe.staging(k);
    if (step.mine_first) {
      reduce_copy(dst + off, mine + off, got, len, fmt.datatype, fmt.op);
    } else {
      reduce_copy(dst + off, got, mine + off, len, fmt.datatype, fmt.op);
    }
    return PLX_SUCCESS;
  };
  // Aliased, send k+1 goes before the wait for slice k: it retires send k (see above).
  return pipe.run({.recvs = recvs,
                   .sends = sends,
                   .recv_ahead = kRecvDepth,
                   .post_recv = post_recv,
                   .post_send = send,
                   .number = [&](size_t k) { return aliased ? k + 1 : k; },
                   .use = use});
}

plx_result_t AllreduceFold::sit_out(const void* in, void* out) const {
  const int partner = fold.partner(transport.rank());
  PLX_CHECK(exchange(
      transport, {.peer = partner, .first_tag = fold_tag, .send = in, .send_count = count}, fmt));
  return exchange(
      transport, {.peer = partner, .first_tag = unfold_tag, .recv = out, .recv_count = count}, fmt);
}

plx_result_t AllreduceFold::absorb(const void* in, void* out) const {
  const int r = transport.rank(), partner = fold.partner(r);
  return exchange(transport,
                  {.peer = partner,
                   .first_tag = fold_tag,
                   .recv = out,
                   .recv_count = count,
                   .mine = in,
                   .mine_first = r < partner},
                  fmt);
}

plx_result_t AllreduceFold::hand_back(const void* out) const {
  return exchange(transport,
                  {.peer = fold.partner(transport.rank()),
                   .first_tag = unfold_tag,
                   .send = out,
                   .send_count = count},
                  fmt);
}

}  // namespace plexus::comm
