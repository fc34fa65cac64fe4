// hierarchical_broadcast.cpp - two-level broadcast: between hosts along the root's lane, then
// inside each host, pipelined in slices down host_tree.h's tree.
//
// The two-level broadcast of NCCL's trees (network between nodes, NVLink inside) and of the
// multi-lane literature (J. L. Traeff and S. Hunold, IEEE Cluster 2020); the slices flow down
// the tree as in the pipelined chain and tree broadcasts of Chan, Heimlich, Purkayastha & van de
// Geijn, CCPE 19(13), 2007. The host layout comes in CollArgs::hosts (host_layout.h; NULL: one
// host).
//
//   1. inter-host: the root sends to the leader of the next host, which forwards to the next
//      (a chain when the message has several slices, a binomial tree when it has one);
//   2. intra-host: every leader sends each slice down a binomial tree of its host's ranks.
//
// Both steps are one pipeline: a rank receives slice k from its parent into recvbuf
// (kRecvDepth posted ahead) and sends it to each child while slice k+1 arrives (recv_copy_send;
// recv on a leaf; send on the root). Send m carries slice m / C to child m mod C (C children,
// the next leader first), ready once slice m / C has landed. The tree has no cycle, so the
// Pipeline's rule (pipeline.h) cannot deadlock: a rank waits only on its parent, and its sends
// only on children that post receives as soon as they have used earlier ones.
//
// Uneven hosts: a host with fewer ranks than the root's lane number has leader lane mod L_h.
// One host: a binomial broadcast pipelined in slices. One rank per host: the chain alone.
//
// Tags: slice k is tag_base | k (a rank receives from one parent, and sends each slice to
// different children); slices are widened if their number would reach kTagIndexLimit.
//
// Bytes: each host's link carries m in once and, on the chain, out once; inside a host a rank
// sends m to each of its binomial children.
#include <algorithm>
#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/algorithms/host_layout.h"
#include "comm/algorithms/host_tree.h"
#include "comm/algorithms/pipeline.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 4;
constexpr size_t kRecvDepth = 4;

}  // namespace

plx_result_t hierarchical_broadcast(Transport& transport, uint64_t tag_base,
                                    const CollArgs& args) {
  const int n = transport.size(), me = transport.rank();
  const size_t bytes = args.count * datatype_bytes(args.datatype);
  auto* out = static_cast<unsigned char*>(args.recvbuf);
  if (bytes == 0) return PLX_SUCCESS;
  if (me == args.root && args.sendbuf != args.recvbuf) std::memcpy(out, args.sendbuf, bytes);
  if (n == 1) return PLX_SUCCESS;
  HostLayout fallback;
  const HostLayout* layout = nullptr;
  PLX_CHECK(resolve_layout(args.hosts, n, me, "hierarchical_broadcast", &fallback, &layout));

  const size_t slice_bytes =
      std::max({args.chunk_bytes, size_t{1}, bytes / kTagIndexLimit + 1});
  const size_t slices = (bytes + slice_bytes - 1) / slice_bytes;
  const HostTree tree =
      host_tree(*layout, args.root, slices > 1 ? LeaderShape::Chain : LeaderShape::Binomial);
  const int parent = tree.parent[me];
  const std::vector<int>& children = tree.children[me];
  const size_t fanout = children.size();
  const auto slice_len = [&](size_t k) { return std::min(slice_bytes, bytes - k * slice_bytes); };

  Pipeline pipe(transport, kSendDepth, kRecvDepth, 0);
  return pipe.run({.recvs = parent < 0 ? 0 : slices,
                   .sends = slices * fanout,
                   .recv_ahead = kRecvDepth,
                   .post_recv =
                       [&](size_t k) {
                         return pipe.post_recv(parent, tag_base | k, out + k * slice_bytes,
                                               slice_len(k));
                       },
                   .post_send =
                       [&](size_t m) {
                         const size_t k = m / fanout;
                         return pipe.send(children[m % fanout], tag_base | k,
                                          out + k * slice_bytes, slice_len(k));
                       },
                   .ready = [&](size_t m, size_t used) { return parent < 0 || m / fanout < used; },
                   .number = [&](size_t k) { return k * fanout; }});
}

}  // namespace plexus::comm
