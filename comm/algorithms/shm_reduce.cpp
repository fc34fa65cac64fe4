// shm_reduce.cpp - reduce to the root through peer memory: shm_allreduce.cpp's steps 1 and 2
// on every rank (each reduces its part of each piece in its own buffer), then step 3 on the
// root only, which copies the n reduced parts into its recvbuf. Memory traffic per rank: m
// copied in, (n-1)/n m reduced; the root also copies m out.
#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/shm_pieces.h"

namespace plexus::comm {

plx_result_t shm_reduce(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  if (!args.peers || args.peers->size() != transport.size() || transport.size() == 1) {
    return ring_reduce(transport, tag_base, args);
  }
  return shm_reduce_pieces(*args.peers, args, args.root, "reduce:shm");
}

}  // namespace plexus::comm
