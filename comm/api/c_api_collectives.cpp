// c_api_collectives.cpp - the collectives and point-to-point calls of include/plexus/plexus.h,
// blocking and non-blocking.
//
// Each entry point reads as two steps (c_api_calls.h): check_X() checks the arguments on the
// caller's pointers, before the device layer looks at the stream and the buffers, so that a bad
// datatype, root or count is reported as such with a stream too; a refused collective still
// takes part in the signature comparison (refused() below). Then the device layer
// (comm/device/device_collective.h: a stream, device buffers checked, staged or run over CUDA
// IPC; a non-blocking call's device buffers are staged per call and copied back when its request
// completes, comm/device/device_deferred.h) calls submit_X() on host buffers.
#include <optional>
#include <string>
#include <string_view>

#include "comm/api/c_api_calls.h"
#include "comm/api/c_api_checks.h"
#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/core/submit.h"
#include "comm/device/device_args.h"
#include "comm/device/device_collective.h"
#include "comm/tuning/algorithm_id.h"

namespace {

using namespace plexus::comm;        // NOLINT: the C ABI layer of this namespace
using namespace plexus::comm::capi;  // NOLINT: the checks and submissions

// The result of a call's check_X(). An argument error in a collective on this rank: the call
// fails here at once, and this rank still takes part in the collective's signature comparison
// (CollectiveOp::refused, run on the progress thread), so every other rank fails with
// PLX_ERROR_MISMATCH naming this one instead of waiting out PLEXUS_TIMEOUT_MS for data that will
// never come, and the communicator stays usable on all of them. Inside a group the comparison
// takes the call's place in the group, and the group fails at plx_group_end on every rank
// (submit.h). Only where that comparison runs (PLEXUS_CHECK_ARGS=1, more than one rank), and for
// collectives (a send or receive has one peer, which times out).
plx_result_t refused(const char* fn, plx_comm* comm, plx_result_t checked) {
  if (checked != PLX_ERROR_INVALID_ARGUMENT || !comm || !comm->check_args || comm->size < 2) {
    return checked;
  }
  std::string_view name(fn);
  name.remove_prefix(std::string_view("plx_").size());
  std::optional<Collective> collective = find_collective(name);
  if (!collective && name.starts_with('i')) collective = find_collective(name.substr(1));
  if (!collective) return checked;
  const std::string message = plexus::last_error();
  CollectiveOp refused;
  refused.refused = true;
  refused.args.collective = *collective;
  refused.tag_base = comm->next_tag_base();
  submit_refused(comm, refused);
  return plexus::set_error(checked, message);
}

// The non-blocking form's device arguments: device buffers are staged through pinned memory of
// the call's own, copied back when the request completes (comm/device/device_deferred.h).
device::DeviceArgs nonblocking(device::DeviceArgs args) {
  args.nonblocking = true;
  return args;
}

bool is_root(const plx_comm* comm, int root) { return comm->rank == root; }

}  // namespace

extern "C" {

plx_result_t plx_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                           void* stream) {
  constexpr const char* fn = "plx_allreduce";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_allreduce(fn, sendbuf, recvbuf, count, datatype, op, comm,
                                                nullptr, false)));
    device::DeviceArgs args = device::allreduce_args(sendbuf, recvbuf, count, datatype, op);
    args.range_run = [&](const void* s, void* r, size_t n) {
      return submit_allreduce(s, r, n, datatype, op, comm, nullptr);
    };
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_allreduce(s, r, count, datatype, op, comm, nullptr);
    });
  });
}

plx_result_t plx_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                            plx_request_t* request) {
  constexpr const char* fn = "plx_iallreduce";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_allreduce(fn, sendbuf, recvbuf, count, datatype, op, comm,
                                                request, true)));
    const device::DeviceArgs args =
        nonblocking(device::allreduce_args(sendbuf, recvbuf, count, datatype, op));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_allreduce(s, r, count, datatype, op, comm, request);
    });
  });
}

plx_result_t plx_reduce(const void* sendbuf, void* recvbuf, size_t count,
                        plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm_t comm,
                        void* stream) {
  constexpr const char* fn = "plx_reduce";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_reduce(fn, sendbuf, recvbuf, count, datatype, op, root,
                                             comm, nullptr, false)));
    device::DeviceArgs args =
        device::reduce_args(sendbuf, recvbuf, count, datatype, is_root(comm, root));
    args.op = op;
    args.root = root;
    args.range_run = [&](const void* s, void* r, size_t n) {
      return submit_reduce(s, r, n, datatype, op, root, comm, nullptr);
    };
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_reduce(s, r, count, datatype, op, root, comm, nullptr);
    });
  });
}

plx_result_t plx_ireduce(const void* sendbuf, void* recvbuf, size_t count,
                         plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm_t comm,
                         plx_request_t* request) {
  constexpr const char* fn = "plx_ireduce";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_reduce(fn, sendbuf, recvbuf, count, datatype, op, root,
                                             comm, request, true)));
    const device::DeviceArgs args = nonblocking(
        device::reduce_args(sendbuf, recvbuf, count, datatype, is_root(comm, root)));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_reduce(s, r, count, datatype, op, root, comm, request);
    });
  });
}

plx_result_t plx_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, int root, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_broadcast";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_broadcast(fn, sendbuf, recvbuf, count, datatype, root,
                                                comm, nullptr, false)));
    device::DeviceArgs args =
        device::broadcast_args(sendbuf, recvbuf, count, datatype, is_root(comm, root));
    args.root = root;
    args.range_run = [&](const void* s, void* r, size_t n) {
      return submit_broadcast(s, r, n, datatype, root, comm, nullptr);
    };
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_broadcast(s, r, count, datatype, root, comm, nullptr);
    });
  });
}

plx_result_t plx_ibroadcast(const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, int root, plx_comm_t comm,
                            plx_request_t* request) {
  constexpr const char* fn = "plx_ibroadcast";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_broadcast(fn, sendbuf, recvbuf, count, datatype, root,
                                                comm, request, true)));
    const device::DeviceArgs args = nonblocking(
        device::broadcast_args(sendbuf, recvbuf, count, datatype, is_root(comm, root)));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_broadcast(s, r, count, datatype, root, comm, request);
    });
  });
}

plx_result_t plx_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                                void* stream) {
  constexpr const char* fn = "plx_reduce_scatter";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_reduce_scatter(fn, sendbuf, recvbuf, recvcount, datatype,
                                                     op, comm, nullptr, false)));
    device::DeviceArgs args =
        device::reduce_scatter_args(sendbuf, recvbuf, recvcount, datatype, comm->size);
    args.op = op;
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_reduce_scatter(s, r, recvcount, datatype, op, comm, nullptr);
    });
  });
}

plx_result_t plx_ireduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                 plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                                 plx_request_t* request) {
  constexpr const char* fn = "plx_ireduce_scatter";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_reduce_scatter(fn, sendbuf, recvbuf, recvcount, datatype,
                                                     op, comm, request, true)));
    const device::DeviceArgs args = nonblocking(
        device::reduce_scatter_args(sendbuf, recvbuf, recvcount, datatype, comm->size));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_reduce_scatter(s, r, recvcount, datatype, op, comm, request);
    });
  });
}

plx_result_t plx_allgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                           plx_datatype_t datatype, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_allgather";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_allgather(fn, sendbuf, recvbuf, sendcount, datatype, comm,
                                                nullptr, false)));
    const device::DeviceArgs args =
        device::allgather_args(sendbuf, recvbuf, sendcount, datatype, comm->size);
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_allgather(s, r, sendcount, datatype, comm, nullptr);
    });
  });
}

plx_result_t plx_iallgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                            plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_iallgather";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_allgather(fn, sendbuf, recvbuf, sendcount, datatype, comm,
                                                request, true)));
    const device::DeviceArgs args =
        nonblocking(device::allgather_args(sendbuf, recvbuf, sendcount, datatype, comm->size));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_allgather(s, r, sendcount, datatype, comm, request);
    });
  });
}

plx_result_t plx_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                          plx_datatype_t datatype, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_alltoall";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_alltoall(fn, sendbuf, recvbuf, count, datatype, comm,
                                               nullptr, false)));
    const device::DeviceArgs args =
        device::alltoall_args(sendbuf, recvbuf, count, datatype, comm->size);
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_alltoall(s, r, count, datatype, comm, nullptr);
    });
  });
}

plx_result_t plx_ialltoall(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_ialltoall";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_alltoall(fn, sendbuf, recvbuf, count, datatype, comm,
                                               request, true)));
    const device::DeviceArgs args =
        nonblocking(device::alltoall_args(sendbuf, recvbuf, count, datatype, comm->size));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_alltoall(s, r, count, datatype, comm, request);
    });
  });
}

plx_result_t plx_alltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                           void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                           plx_datatype_t datatype, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_alltoallv";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_alltoallv(fn, sendbuf, sendcounts, sdispls, recvbuf,
                                                recvcounts, rdispls, datatype, comm, nullptr,
                                                false)));
    const device::DeviceArgs args = device::alltoallv_args(
        sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, comm->size);
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_alltoallv(s, sendcounts, sdispls, r, recvcounts, rdispls, datatype, comm,
                              nullptr);
    });
  });
}

plx_result_t plx_ialltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                            void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                            plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_ialltoallv";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_alltoallv(fn, sendbuf, sendcounts, sdispls, recvbuf,
                                                recvcounts, rdispls, datatype, comm, request,
                                                true)));
    const device::DeviceArgs args = nonblocking(device::alltoallv_args(
        sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls, datatype, comm->size));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_alltoallv(s, sendcounts, sdispls, r, recvcounts, rdispls, datatype, comm,
                              request);
    });
  });
}

plx_result_t plx_gather(const void* sendbuf, void* recvbuf, size_t sendcount,
                        plx_datatype_t datatype, int root, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_gather";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_gather(fn, sendbuf, recvbuf, sendcount, datatype, root,
                                             comm, nullptr, false)));
    const device::DeviceArgs args = device::gather_args(sendbuf, recvbuf, sendcount, datatype,
                                                        comm->size, is_root(comm, root));
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_gather(s, r, sendcount, datatype, root, comm, nullptr);
    });
  });
}

plx_result_t plx_igather(const void* sendbuf, void* recvbuf, size_t sendcount,
                         plx_datatype_t datatype, int root, plx_comm_t comm,
                         plx_request_t* request) {
  constexpr const char* fn = "plx_igather";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_gather(fn, sendbuf, recvbuf, sendcount, datatype, root,
                                             comm, request, true)));
    const device::DeviceArgs args = nonblocking(device::gather_args(
        sendbuf, recvbuf, sendcount, datatype, comm->size, is_root(comm, root)));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_gather(s, r, sendcount, datatype, root, comm, request);
    });
  });
}

plx_result_t plx_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                         plx_datatype_t datatype, int root, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_scatter";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_scatter(fn, sendbuf, recvbuf, recvcount, datatype, root,
                                              comm, nullptr, false)));
    const device::DeviceArgs args = device::scatter_args(sendbuf, recvbuf, recvcount, datatype,
                                                         comm->size, is_root(comm, root));
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void* r) {
      return submit_scatter(s, r, recvcount, datatype, root, comm, nullptr);
    });
  });
}

plx_result_t plx_iscatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                          plx_datatype_t datatype, int root, plx_comm_t comm,
                          plx_request_t* request) {
  constexpr const char* fn = "plx_iscatter";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(refused(fn, comm, check_scatter(fn, sendbuf, recvbuf, recvcount, datatype, root,
                                              comm, request, true)));
    const device::DeviceArgs args = nonblocking(device::scatter_args(
        sendbuf, recvbuf, recvcount, datatype, comm->size, is_root(comm, root)));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void* r) {
      return submit_scatter(s, r, recvcount, datatype, root, comm, request);
    });
  });
}

plx_result_t plx_send(const void* sendbuf, size_t count, plx_datatype_t datatype, int peer,
                      plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_send";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(check_p2p(fn, true, sendbuf, count, datatype, peer, comm, nullptr, false));
    device::DeviceArgs args = device::send_args(sendbuf, count, datatype);
    args.peer = peer;
    args.range_run = [&](const void* s, void*, size_t n) {
      return submit_p2p(true, s, n, datatype, peer, comm, nullptr);
    };
    return device::run_collective(fn, comm, stream, args, [&](const void* s, void*) {
      return submit_p2p(true, s, count, datatype, peer, comm, nullptr);
    });
  });
}

plx_result_t plx_isend(const void* sendbuf, size_t count, plx_datatype_t datatype, int peer,
                       plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_isend";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(check_p2p(fn, true, sendbuf, count, datatype, peer, comm, request, true));
    const device::DeviceArgs args = nonblocking(device::send_args(sendbuf, count, datatype));
    return device::run_collective(fn, comm, nullptr, args, [&](const void* s, void*) {
      return submit_p2p(true, s, count, datatype, peer, comm, request);
    });
  });
}

plx_result_t plx_recv(void* recvbuf, size_t count, plx_datatype_t datatype, int peer,
                      plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_recv";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(check_p2p(fn, false, recvbuf, count, datatype, peer, comm, nullptr, false));
    device::DeviceArgs args = device::recv_args(recvbuf, count, datatype);
    args.peer = peer;
    args.range_run = [&](const void*, void* r, size_t n) {
      return submit_p2p(false, r, n, datatype, peer, comm, nullptr);
    };
    return device::run_collective(fn, comm, stream, args, [&](const void*, void* r) {
      return submit_p2p(false, r, count, datatype, peer, comm, nullptr);
    });
  });
}

plx_result_t plx_irecv(void* recvbuf, size_t count, plx_datatype_t datatype, int peer,
                       plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_irecv";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(check_p2p(fn, false, recvbuf, count, datatype, peer, comm, request, true));
    const device::DeviceArgs args = nonblocking(device::recv_args(recvbuf, count, datatype));
    return device::run_collective(fn, comm, nullptr, args, [&](const void*, void* r) {
      return submit_p2p(false, r, count, datatype, peer, comm, request);
    });
  });
}

// The barrier has no buffers, so no device layer. A refused one (a NULL comm, or plx_ibarrier's
// NULL request) fails on this rank only, as a refused send or receive does.
plx_result_t plx_barrier(plx_comm_t comm) {
  constexpr const char* fn = "plx_barrier";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(check_barrier(fn, comm, nullptr, false));
    return submit_barrier(comm, nullptr);
  });
}

plx_result_t plx_ibarrier(plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_ibarrier";
  return guarded(fn, [&]() -> plx_result_t {
    PLX_CHECK(check_barrier(fn, comm, request, true));
    return submit_barrier(comm, request);
  });
}

}  // extern "C"
