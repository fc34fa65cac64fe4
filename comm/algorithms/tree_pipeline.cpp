// tree_pipeline.cpp - see tree_pipeline.h.
#include "comm/algorithms/tree_pipeline.h"

#include <algorithm>
#include <cstdint>
#include <tuple>

#include "comm/algorithms/pipeline.h"
#include "comm/algorithms/slices.h"
#include "comm/algorithms/staging_buffer.h"
#include "comm/base/error.h"
#include "comm/reduce/reduce.h"
#include "comm/transport/tag.h"

namespace plexus::comm {
namespace {

constexpr size_t kSendDepth = 8;
constexpr size_t kRecvDepth = 8;  // a node interior in one tree receives ~4 messages per step

enum Direction : int { kUp = 0, kDown = 1 };

// A stream of messages along one tree edge, one per slice: slice k travels at T = k + offset.
struct Edge {
  size_t tree;
  Direction dir;
  int sender;
  int receiver;
  size_t offset;
  size_t slices;
  size_t child = 0;  // up receives: the sender's index in TreeRole::children
};

using Key = std::tuple<size_t, size_t, int, int, int>;  // (T, tree, dir, sender, receiver)

// Walks the messages of a set of edges in key order.
class Schedule {
 public:
  explicit Schedule(std::vector<Edge> edges) : edges_(std::move(edges)) {
    std::sort(edges_.begin(), edges_.end(), [](const Edge& a, const Edge& b) {
      return std::tie(a.tree, a.dir, a.sender, a.receiver) <
             std::tie(b.tree, b.dir, b.sender, b.receiver);
    });
    t_ = SIZE_MAX;
    for (const Edge& e : edges_) {
      if (e.slices == 0) continue;
      t_ = std::min(t_, e.offset);
      end_ = std::max(end_, e.offset + e.slices);
    }
    if (t_ == SIZE_MAX) t_ = end_;
    settle();
  }
  bool done() const { return t_ >= end_; }
  const Edge& edge() const { return edges_[i_]; }
  size_t slice() const { return t_ - edges_[i_].offset; }
  Key key() const {
    const Edge& e = edges_[i_];
    return {t_, e.tree, e.dir, e.sender, e.receiver};
  }
  void next() {
    ++i_;
    settle();
  }

 private:
  // Moves to the first edge at or after (t_, i_) that carries a slice at time t_.
  void settle() {
    for (; t_ < end_; ++t_, i_ = 0) {
      for (; i_ < edges_.size(); ++i_) {
        const Edge& e = edges_[i_];
        if (t_ >= e.offset && t_ - e.offset < e.slices) return;
      }
    }
  }

  std::vector<Edge> edges_;
  size_t t_ = 0;
  size_t end_ = 0;
  size_t i_ = 0;
};

}  // namespace

TreeRole tree_role(const std::vector<int>& parent, int rank, size_t begin, size_t count) {
  const size_t n = parent.size();
  std::vector<size_t> height(n, 0);
  for (size_t x = 0; x < n; ++x) {  // x raises the height of each ancestor to its distance
    size_t dist = 1;
    for (int a = parent[x]; a >= 0 && dist <= n; a = parent[a], ++dist) {
      height[a] = std::max(height[a], dist);
    }
  }
  TreeRole role;
  role.parent = parent[rank];
  role.height = height[rank];
  role.begin = begin;
  role.count = count;
  for (int a = parent[rank]; a >= 0 && role.depth < n; a = parent[a]) ++role.depth;
  for (size_t x = 0; x < n; ++x) {
    if (parent[x] < 0) role.tree_height = height[x];
    if (parent[x] == rank) role.children.push_back(static_cast<int>(x));
  }
  std::stable_sort(role.children.begin(), role.children.end(),
                   [&](int a, int b) { return height[a] < height[b]; });
  for (int c : role.children) role.child_height.push_back(height[c]);
  return role;
}

plx_result_t tree_reduce_broadcast(Transport& transport, uint64_t tag_base,
                                   const std::vector<TreeRole>& trees, const TreeBuffers& io) {
  const size_t elem = datatype_bytes(io.datatype);
  const size_t n = static_cast<size_t>(transport.size());
  const int me = transport.rank();
  const auto* in = static_cast<const unsigned char*>(io.in);
  size_t max_count = 0;
  for (const TreeRole& role : trees) max_count = std::max(max_count, role.count);
  if (max_count == 0) return PLX_SUCCESS;

  // Slices of at most chunk_bytes, widened so that tag indices (2 per tree and slice) stay below
  // kTagIndexLimit, and never longer than the largest tree's share (this sizes the staging slots).
  const size_t slice_elems = slice_elems_for(io.chunk_bytes, elem, max_count, 2 * trees.size());

  std::vector<Edge> recvs, sends;
  size_t acc_elems = 0;  // the accumulator must hold every tree this rank combines in
  for (size_t t = 0; t < trees.size(); ++t) {
    const TreeRole& role = trees[t];
    const size_t slices = slices_of(role.count, slice_elems);
    if (slices == 0) continue;
    const size_t down_offset = role.tree_height + role.depth;
    for (size_t j = 0; j < role.children.size(); ++j) {
      recvs.push_back({t, kUp, role.children[j], me, role.child_height[j], slices, j});
      if (io.broadcast) sends.push_back({t, kDown, me, role.children[j], down_offset + 1, slices});
    }
    if (role.parent >= 0) {
      sends.push_back({t, kUp, me, role.parent, role.height, slices});
      if (io.broadcast) recvs.push_back({t, kDown, role.parent, me, down_offset, slices});
    }
    if (!role.children.empty()) acc_elems = std::max(acc_elems, role.begin + role.count);
  }

  StagingBuffer scratch(io.out != nullptr ? 0 : acc_elems * elem);  // outlives the pipeline
  unsigned char* acc = io.out != nullptr ? static_cast<unsigned char*>(io.out) : scratch.data();
  Pipeline pipe(transport, kSendDepth, kRecvDepth, slice_elems * elem);

  // Slice k of edge e's tree, in bytes from the buffer start.
  const auto range = [&](const Edge& e, size_t k, size_t* off_bytes, size_t* bytes) {
    const TreeRole& role = trees[e.tree];
    const size_t lo = k * slice_elems;
    *off_bytes = (role.begin + lo) * elem;
    *bytes = (std::min(role.count, lo + slice_elems) - lo) * elem;
  };
  const auto tag = [&](const Edge& e, size_t k) {
    return tag_base | ((k * trees.size() + e.tree) * 2 + e.dir);
  };
  // Receive number `seq`: an up partial into its staging slot, a down result into place.
  const auto post_recv = [&](const Schedule& s, size_t seq) {
    const Edge& e = s.edge();
    size_t off = 0, bytes = 0;
    range(e, s.slice(), &off, &bytes);
    void* dst = e.dir == kUp ? static_cast<void*>(pipe.staging(seq)) : acc + off;
    return pipe.post_recv(e.sender, tag(e, s.slice()), dst, bytes);
  };
  // Up: a leaf's own input, or the accumulated partial. Down: the final result.
  const auto send = [&](const Schedule& s) {
    const Edge& e = s.edge();
    size_t off = 0, bytes = 0;
    range(e, s.slice(), &off, &bytes);
    const bool leaf = trees[e.tree].children.empty();
    const unsigned char* src = e.dir == kUp && leaf ? in : acc;
    return pipe.send(e.receiver, tag(e, s.slice()), src + off, bytes);
  };
  // Combines an up partial into the accumulator (the first child's with this rank's input); the
  // root divides the finished slice for PLX_AVG. A down result already lies in place.
  const auto combine = [&](const Schedule& s, size_t seq) {
    const Edge& e = s.edge();
    if (e.dir == kDown) return;
    const TreeRole& role = trees[e.tree];
    size_t off = 0, bytes = 0;
    range(e, s.slice(), &off, &bytes);
    const size_t len = bytes / elem;
    if (e.child == 0) {
      reduce_copy(acc + off, in + off, pipe.staging(seq), len, io.datatype, io.op);
    } else {
      reduce_into(acc + off, pipe.staging(seq), len, io.datatype, io.op);
    }
    if (role.parent < 0 && e.child + 1 == role.children.size() && io.op == PLX_AVG) {
      divide_by(acc + off, len, io.datatype, n);
    }
  };

  Schedule to_post(recvs), to_wait(std::move(recvs)), to_send(std::move(sends));
  size_t posted = 0;
  for (; posted < kRecvDepth && !to_post.done(); ++posted, to_post.next()) {
    PLX_CHECK(post_recv(to_post, posted));
  }
  for (size_t seq = 0; !to_wait.done(); ++seq, to_wait.next()) {
    // Every send keyed below this receive goes first (it may wait for an older send).
    for (; !to_send.done() && to_send.key() < to_wait.key(); to_send.next()) {
      PLX_CHECK(send(to_send));
    }
    PLX_CHECK(pipe.wait_recv());
    combine(to_wait, seq);
    if (!to_post.done()) {  // into the staging slot `seq` has just freed
      PLX_CHECK(post_recv(to_post, posted++));
      to_post.next();
    }
  }
  for (; !to_send.done(); to_send.next()) PLX_CHECK(send(to_send));
  return scratch.settle(pipe.finish());
}

}  // namespace plexus::comm
