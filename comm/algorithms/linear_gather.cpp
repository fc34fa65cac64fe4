// linear_gather.cpp - gather by direct messages to the root.
//
// The flat tree of MPICH's and Open MPI's basic gather (Open MPI ompi/mca/coll/basic,
// "linear"): every rank sends its block straight to the root, which posts all n-1 receives,
// each into its final place recvbuf + j*count, before it waits for any. n = 5, root 2:
//
//        0   1   3   4
//         \   \ /   /          one message per rank; the root receives n-1 blocks
//          +-- 2 --+           in whatever order they arrive.
//
// The root copies its own block from sendbuf unless in place (sendbuf == recvbuf +
// root*count elements). Tags: every message is tag_base | 0 (each rank sends once).
// Bytes on the wire: (n-1) * count * elem_bytes into the root, one message time of latency
// plus the root's link time; no scratch memory and no block forwarded twice (binomial_gather
// has fewer message times, log2 n, for small blocks).
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t linear_gather(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  const int r = transport.rank();
  const size_t block = args.count * datatype_bytes(args.datatype);
  if (block == 0) return PLX_SUCCESS;
  if (r != args.root) return send_one(transport, args.root, tag_base, args.sendbuf, block);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  Pipeline pipe(transport, 1, static_cast<size_t>(n - 1), 0);
  for (int j = 0; j < n; ++j) {
    if (j != r) PLX_CHECK(pipe.post_recv(j, tag_base, out + j * block, block));
  }
  unsigned char* own = out + r * block;
  if (args.sendbuf != own) std::memcpy(own, args.sendbuf, block);
  return pipe.finish();
}

}  // namespace plexus::comm
