// linear_scatter.cpp - scatter by direct messages from the root.
//
// The flat tree of MPICH's and Open MPI's basic scatter (Open MPI ompi/mca/coll/basic,
// "linear"): the root posts all n-1 sends, block j = sendbuf + j*count straight to rank j,
// before it waits for any; every other rank receives its block into recvbuf. n = 5, root 2:
//
//          +-- 2 --+           one message per rank; the root's sends are all in
//         /   / \   \          flight at once.
//        0   1   3   4
//
// The root copies its own block into recvbuf unless in place (recvbuf == sendbuf +
// root*count elements). Tags: every message is tag_base | 0 (each rank receives once).
// Bytes on the wire: (n-1) * count * elem_bytes out of the root, one message time of latency
// plus the root's link time; no scratch memory and no block forwarded twice (binomial_scatter
// has fewer message times, log2 n, for small blocks).
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

plx_result_t linear_scatter(Transport& transport, uint64_t tag_base, const CollArgs& args) {
  const int n = transport.size();
  const int r = transport.rank();
  const size_t block = args.count * datatype_bytes(args.datatype);
  if (block == 0) return PLX_SUCCESS;
  if (r != args.root) return recv_one(transport, args.root, tag_base, args.recvbuf, block);
  const auto* in = static_cast<const unsigned char*>(args.sendbuf);
  Pipeline pipe(transport, static_cast<size_t>(n - 1), 1, 0);
  for (int j = 0; j < n; ++j) {
    if (j != r) PLX_CHECK(pipe.send(j, tag_base, in + j * block, block));
  }
  const unsigned char* own = in + r * block;
  if (args.recvbuf != own) std::memcpy(args.recvbuf, own, block);
  return pipe.finish();
}

}  // namespace plexus::comm
