// dissemination_barrier.cpp - the dissemination barrier.
//
// D. Hensgen, R. Finkel and U. Manber, "Two algorithms for barrier synchronization", Int. J.
// Parallel Programming 17(1), 1988. In round j = 0..ceil(log2 n)-1, rank r sends a zero-byte
// message to (r + 2^j) mod n and waits for the one from (r - 2^j) mod n. After round j, rank r
// has heard, directly or through a chain, from the 2^(j+1) - 1 ranks before it, so after
// ceil(log2 n) rounds it knows every rank has entered. n = 6:
//
//   round 0 (+1):  0->1  1->2  2->3  3->4  4->5  5->0
//   round 1 (+2):  0->2  1->3  2->4  3->5  4->0  5->1
//   round 2 (+4):  0->4  1->5  2->0  3->1  4->2  5->3
//
// Unlike a tree barrier there is no root and no release phase: every rank sends ceil(log2 n)
// messages of 0 bytes and the latency is ceil(log2 n) one-way message times.
// Tags: round j is tag_base | j.
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"

namespace plexus::comm {

plx_result_t dissemination_barrier(Transport& transport, uint64_t tag_base, const CollArgs&) {
  const int n = transport.size();
  const int r = transport.rank();
  uint64_t round = 0;
  for (int distance = 1; distance < n; distance *= 2, ++round) {
    Pipeline pipe(transport, 1, 1, 0);  // owns the two requests, even on failure
    PLX_CHECK(pipe.post_recv((r - distance % n + n) % n, tag_base | round, nullptr, 0));
    PLX_CHECK(pipe.send((r + distance) % n, tag_base | round, nullptr, 0));
    PLX_CHECK(pipe.finish());
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
