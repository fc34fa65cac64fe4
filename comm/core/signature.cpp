// signature.cpp - see signature.h.
#include "comm/core/signature.h"

#include <fmt/format.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/transport/tag.h"

namespace plexus::comm {
namespace {

// What one rank knows after some rounds: the smallest and largest signature seen, and whose.
struct Extremes {
  Signature min;
  Signature max;
  int32_t min_rank = 0;
  int32_t max_rank = 0;
  uint32_t registered = 1;  // AND of the `registered` seen
  uint32_t pad = 0;
};

// Everything but `registered`, the last field, which ranks may differ in.
int compare(const Signature& a, const Signature& b) {
  static_assert(offsetof(Signature, registered) + sizeof(uint32_t) == sizeof(Signature));
  return std::memcmp(&a, &b, offsetof(Signature, registered));
}

void combine(Extremes& mine, const Extremes& theirs) {
  mine.registered &= theirs.registered;
  const int low = compare(theirs.min, mine.min);
  if (low < 0 || (low == 0 && theirs.min_rank < mine.min_rank)) {
    mine.min = theirs.min;
    mine.min_rank = theirs.min_rank;
  }
  const int high = compare(theirs.max, mine.max);
  if (high > 0 || (high == 0 && theirs.max_rank < mine.max_rank)) {
    mine.max = theirs.max;
    mine.max_rank = theirs.max_rank;
  }
}

// PLX_SUCCESS when every signature was equal, else PLX_ERROR_MISMATCH naming both sides.
plx_result_t verdict(const Extremes& state, int r, DescribeSignature describe) {
  if (compare(state.min, state.max) == 0) return PLX_SUCCESS;
  const Extremes& e = state;
  const int first = e.min_rank < e.max_rank ? e.min_rank : e.max_rank;
  const Signature& first_sig = e.min_rank < e.max_rank ? e.min : e.max;
  const int second = e.min_rank < e.max_rank ? e.max_rank : e.min_rank;
  const Signature& second_sig = e.min_rank < e.max_rank ? e.max : e.min;
  return set_error(PLX_ERROR_MISMATCH,
                   fmt::format("rank {}: mismatched collective calls: rank {} called {} but rank "
                               "{} called {}",
                               r, first, describe(first_sig), second, describe(second_sig)));
}

// Every rank's signature, all[i] rank i's, combined in rank order.
Extremes extremes_of(const Signature* all, int n) {
  Extremes state;
  state.min = state.max = all[0];
  state.registered = all[0].registered != 0 ? 1 : 0;
  for (int i = 1; i < n; ++i) {
    Extremes one;
    one.min = one.max = all[i];
    one.min_rank = one.max_rank = i;
    one.registered = all[i].registered != 0 ? 1 : 0;
    combine(state, one);
  }
  return state;
}

}  // namespace

plx_result_t compare_signatures(Transport& transport, uint64_t tag_base, const Signature& mine,
                                DescribeSignature describe, PeerMemory* peers,
                                bool* all_registered) {
  const int n = transport.size();
  const int r = transport.rank();
  Extremes state;
  state.min = state.max = mine;
  state.min_rank = state.max_rank = r;
  state.registered = mine.registered != 0 ? 1 : 0;
  if (peers != nullptr && peers->size() == n && n > 1) {
    // The segment of a one-host communicator: its member i is rank i (PeerMemory::open).
    Signature few[kNoteCheckRanks];
    std::vector<Signature> many;
    Signature* all = few;
    if (n > kNoteCheckRanks) {
      many.resize(static_cast<size_t>(n));
      all = many.data();
    }
    // No op prefix: the C ABI's names the call, as for the messages' failures below.
    PLX_CHECK(peers->exchange_notes(&mine, sizeof(mine), all, "",
                                    "arrive at the argument check of piece"));
    state = extremes_of(all, n);
  } else {
    uint64_t round = 0;
    for (int distance = 1; distance < n; distance *= 2, ++round) {
      Extremes outgoing = state;
      Extremes incoming;
      Pipeline pipe(transport, 1, 1, 0);
      const uint64_t tag = tag_base | (kTagCoreIndexBase + round);
      PLX_CHECK(pipe.post_recv((r - distance % n + n) % n, tag, &incoming, sizeof(incoming)));
      PLX_CHECK(pipe.send((r + distance) % n, tag, &outgoing, sizeof(outgoing)));
      PLX_CHECK(pipe.finish());
      combine(state, incoming);
    }
  }
  PLX_CHECK(verdict(state, r, describe));
  if (all_registered) *all_registered = state.registered == 1;
  return PLX_SUCCESS;
}

plx_result_t judge_signatures(const Signature* all, int n, int rank, DescribeSignature describe) {
  return verdict(extremes_of(all, n), rank, describe);
}

}  // namespace plexus::comm
