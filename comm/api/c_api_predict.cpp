// c_api_predict.cpp - plx_comm_predict_time (include/plexus/plexus.h): what the communicator's
// cost model predicts for a collective on a group of its ranks, without running anything. The
// engine's placement planner prices the collectives of groups it has not made yet with it.
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "comm/algorithms/host_layout.h"
#include "comm/api/c_api_checks.h"
#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/reduce/reduce.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/cost_shape.h"
#include "plexus/plexus.h"

namespace {

using namespace plexus::comm;  // NOLINT: the C ABI layer of this namespace
using plexus::set_error;

constexpr const char* kFn = "plx_comm_predict_time";
constexpr std::string_view kSendRecv = "sendrecv";

// The cost shape of `members` (ranks of comm) run as one group: their hosts as comm's layout
// has them, and comm's peer-memory verdict.
CostShape member_shape(const plx_comm& comm, const std::vector<int>& members) {
  std::vector<std::string> host_ids, nic_ids;
  host_ids.reserve(members.size());
  for (int r : members) host_ids.push_back(comm.host_ids.at(r));  // as a split would have them
  // The members' NICs, as a split keeps them (communicator_split.cpp).
  if (comm.nic_ids.size() == comm.host_ids.size()) {
    for (int r : members) nic_ids.push_back(comm.nic_ids.at(r));
  }
  const HostLayout layout = host_layout(host_ids);
  CostShape shape = cost_shape(layout);
  shape.nics_per_host = nics_in_use(layout, nic_ids);
  shape.peer_memory = comm.cost_shape.peer_memory;
  shape.eager_bytes = comm.cost_shape.eager_bytes;
  shape.lanes = comm.cost_shape.lanes;
  return shape;
}

}  // namespace

extern "C" {

plx_result_t plx_comm_predict_time(plx_comm_t comm, const char* collective, size_t count,
                                   plx_datatype_t datatype, const int* ranks, int nranks,
                                   double* seconds) {
  return guarded(kFn, [&]() -> plx_result_t {
    if (!comm) return null_argument(kFn, nullptr, "comm");
    if (!collective) return null_argument(kFn, comm, "collective");
    if (!seconds) return null_argument(kFn, comm, "seconds");
    if (plx_result_t r = check_datatype(kFn, comm, datatype); r != PLX_SUCCESS) return r;
    const std::string_view name = collective;
    const Collective which = find_collective(name).value_or(Collective::kCount);
    if (which == Collective::kCount && name != kSendRecv) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: collective {:?} is not one of {}, sendrecv", kFn,
                                   comm->rank, name, collective_names()));
    }
    if (nranks < 1 || nranks > comm->size) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: nranks {} not in 1..{} (the communicator's size)",
                                   kFn, comm->rank, nranks, comm->size));
    }
    if (!ranks && nranks != comm->size) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: ranks is NULL but nranks {} is not the "
                                   "communicator's size {}",
                                   kFn, comm->rank, nranks, comm->size));
    }
    std::vector<int> members(nranks);
    std::vector<bool> seen(comm->size, false);
    for (int i = 0; i < nranks; ++i) {
      const int r = ranks ? ranks[i] : i;
      if (r < 0 || r >= comm->size || seen[r]) {
        return set_error(PLX_ERROR_INVALID_ARGUMENT,
                         fmt::format("{}: rank {}: ranks[{}] {} {}", kFn, comm->rank, i, r,
                                     r < 0 || r >= comm->size
                                         ? fmt::format("not in 0..{}", comm->size - 1)
                                         : std::string("is listed twice")));
      }
      seen[r] = true;
      members[i] = r;
    }
    const size_t element = datatype_bytes(datatype);
    if (count > SIZE_MAX / element) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: count {} of {}-byte elements overflows size_t",
                                   kFn, comm->rank, count, element));
    }
    const size_t bytes = count * element;
    const CostShape shape = member_shape(*comm, members);
    if (which == Collective::kCount) {  // sendrecv: one message between the first two members
      if (nranks != 2) {
        return set_error(PLX_ERROR_INVALID_ARGUMENT,
                         fmt::format("{}: rank {}: sendrecv needs nranks 2, not {}", kFn,
                                     comm->rank, nranks));
      }
      const bool across = shape.multi_host() && comm->cost.two_level();
      const double alpha = across ? comm->cost.inter_alpha_s : comm->cost.alpha_s;
      const double beta = across ? comm->cost.inter_beta_s_per_byte : comm->cost.beta_s_per_byte;
      *seconds = alpha + static_cast<double>(bytes) * beta;
      return PLX_SUCCESS;
    }
    *seconds = choose(which, bytes, shape, comm->cost, comm->chunk_bytes, comm->overrides)
                   .predicted_s;
    return PLX_SUCCESS;
  });
}

}  // extern "C"
