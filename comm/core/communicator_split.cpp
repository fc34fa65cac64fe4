// communicator_split.cpp - plx_comm_split: new communicators from an existing one.
//
// MPI_Comm_split semantics (MPI 4.0, section 7.4.2), made with the parent's own collectives:
//   1. every rank's (color, key, bad-color flag) reaches every rank: an allreduce-sum of a table
//      that each rank fills only in its own row (no rank adds to another's row, so the sum is an
//      allgather). A bad color anywhere fails every rank alike before anything is opened;
//   2. members of each color, ordered by (key, parent rank), get ranks 0..m-1;
//   3. each member opens a new endpoint like the parent's (Transport::open_sibling);
//   4. the endpoint addresses go round the same way (their lengths first, then the bytes), and
//      each member connects to the addresses of its color;
//   5. a barrier on the new endpoint, so no member sends before every member has connected;
//   6. a child whose members share a host makes its peer-memory segment (communicator_peers.cpp).
// The child's AsyncState has the parent's as its parent: a peer lost on the parent's liveness
// channel fails the child's calls too. A member's plx_comm_abort of the child reaches the
// others over the world's rendezvous connection (COMM_ABORT, filed under the child's comm_id).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "comm/core/submit.h"

namespace plexus::comm {
namespace {

// Every rank's `row` of `width` int64 values, on every rank (allreduce-sum of disjoint rows).
plx_result_t allgather_rows(plx_comm* parent, const std::vector<int64_t>& row,
                            std::vector<int64_t>* table) {
  const size_t width = row.size();
  table->assign(width * parent->size, 0);
  std::copy(row.begin(), row.end(), table->begin() + width * parent->rank);
  CollArgs args;
  args.collective = Collective::Allreduce;
  args.sendbuf = table->data();
  args.recvbuf = table->data();
  args.count = table->size();
  args.datatype = PLX_INT64;
  args.op = PLX_SUM;
  args.chunk_bytes = parent->chunk_bytes;
  return ring_allreduce(*parent->transport, parent->next_tag_base(), args);
}

// A split communicator's id, the same on every member: they share the parent, the parent's
// split count (every rank of the parent calls split, so the counts agree) and the color.
// splitmix64's finalizer (Steele, Lea and Flood, OOPSLA 2014) mixes the three.
uint64_t child_comm_id(uint64_t parent_id, uint64_t split_index, int color) {
  uint64_t x = parent_id ^ (split_index * 0x9e3779b97f4a7c15ULL) ^
               (static_cast<uint64_t>(static_cast<uint32_t>(color)) << 32);
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x == 0 ? 1 : x;  // 0 is a world communicator's
}

plx_result_t split(plx_comm* parent, int color, int key, plx_comm** out) {
  const int n = parent->size;
  const uint64_t split_index = parent->split_count++;
  const bool bad_color = color < 0 && color != PLX_UNDEFINED;
  // 1. (color, key, bad) of every rank.
  std::vector<int64_t> table;
  PLX_CHECK(allgather_rows(parent, {color, key, bad_color ? 1 : 0}, &table));
  for (int r = 0; r < n; ++r) {
    if (table[3 * r + 2] != 0) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("rank {}: rank {} passed color {}; colors must be >= 0 or "
                                   "PLX_UNDEFINED ({})",
                                   parent->rank, r, table[3 * r], PLX_UNDEFINED));
    }
  }
  // 2. Members of my color in (key, parent rank) order.
  std::vector<int> members;
  if (color != PLX_UNDEFINED) {
    for (int r = 0; r < n; ++r) {
      if (table[3 * r] == color) members.push_back(r);
    }
    std::stable_sort(members.begin(), members.end(),
                     [&](int a, int b) { return table[3 * a + 1] < table[3 * b + 1]; });
  }
  const int size = static_cast<int>(members.size());
  const int rank = static_cast<int>(
      std::find(members.begin(), members.end(), parent->rank) - members.begin());

  // 3. A new endpoint for members.
  auto child = std::make_unique<plx_comm>();
  std::vector<uint8_t> address;
  if (color != PLX_UNDEFINED) {
    child->rank = rank;
    child->size = size;
    child->timeout_ms = parent->timeout_ms;
    child->chunk_bytes = parent->chunk_bytes;
    child->async = std::make_shared<AsyncState>(parent->async);
    child->comm_id = child_comm_id(parent->comm_id, split_index, color);
    child->world_rank = parent->world_rank;
    child->liveness = parent->liveness;
    PLX_CHECK(parent->transport->open_sibling(rank, size, parent->timeout_ms, child->async,
                                              &child->transport));
    address = child->transport->local_address();
  }
  // 4. Addresses: lengths, then the bytes, each rank in its own row.
  std::vector<int64_t> lengths;
  PLX_CHECK(allgather_rows(parent, {static_cast<int64_t>(address.size())}, &lengths));
  const size_t width = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<int64_t> row(width, 0);
  for (size_t i = 0; i < address.size(); ++i) row[i] = address[i];
  std::vector<int64_t> bytes;
  if (width > 0) PLX_CHECK(allgather_rows(parent, row, &bytes));
  if (color == PLX_UNDEFINED) {
    *out = nullptr;
    return PLX_SUCCESS;
  }
  std::vector<std::vector<uint8_t>> addresses;
  for (int member : members) {
    std::vector<uint8_t> a(static_cast<size_t>(lengths[member]));
    for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<uint8_t>(bytes[member * width + i]);
    addresses.push_back(std::move(a));
  }
  PLX_CHECK(child->transport->connect(addresses));
  for (int member : members) child->host_ids.push_back(parent->host_ids.at(member));
  // The child's endpoints open the parent's domain (OfiTransport::open_sibling), so each member
  // sends on the NIC it did in the parent.
  if (parent->nic_ids.size() == parent->host_ids.size()) {
    for (int member : members) child->nic_ids.push_back(parent->nic_ids.at(member));
  }
  const std::string& my_host = parent->host_ids.at(parent->rank);
  child->local_rank = 0;
  child->local_size = 0;
  for (int r = 0; r < size; ++r) {
    if (child->host_ids[r] != my_host) continue;
    if (r < rank) ++child->local_rank;
    ++child->local_size;
  }
  child->process_local_rank =
      parent->process_local_rank >= 0 ? parent->process_local_rank : parent->local_rank;
  child->process_local_size =
      parent->process_local_size >= 0 ? parent->process_local_size : parent->local_size;
  PLX_CHECK(finish_setup(child.get()));
  child->check_args = parent->check_args;
  child->cost = parent->cost;
  child->overrides = parent->overrides;
  child->overrides_spec = parent->overrides_spec;
  child->cost_shape.lanes = parent->cost_shape.lanes;  // compared when the world was created
  // 5. Everyone connected before anyone sends.
  if (size > 1) {
    PLX_CHECK(dissemination_barrier(*child->transport, child->next_tag_base(), CollArgs{}));
  }
  PLX_CHECK(open_peer_memory(child.get()));  // a child on one host gets its own segment
  if (child->liveness) child->liveness->watch_communicator(child->comm_id, child->async);
  log_message(LogLevel::Info, "split: color {} key {}: rank {} of {} (parent rank {} of {})",
              color, key, rank, size, parent->rank, n);
  *out = child.release();
  return PLX_SUCCESS;
}

}  // namespace

plx_result_t split_communicator(plx_comm* parent, int color, int key, plx_comm** out) {
  // Runs as a task of the parent, after the parent's earlier work.
  return submit_body(parent, [&] { return split(parent, color, key, out); });
}

}  // namespace plexus::comm
