// c_api_collectives.cpp - the collectives and point-to-point calls of include/plexus/plexus.h,
// blocking and non-blocking.
//
// Both forms go through comm/device/device_collective.h first (a stream, device buffers: checked,
// staged or run over CUDA IPC; a non-blocking call's device buffers are staged per call and
// copied back when its request completes, comm/device/device_deferred.h), then run the shared
// body of c_api_calls.h on host buffers.
#include <optional>
#include <string>
#include <string_view>

#include "comm/api/c_api_calls.h"
#include "comm/api/c_api_checks.h"
#include "comm/core/communicator.h"
#include "comm/base/error.h"
#include "comm/core/submit.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/device/device_args.h"
#include "comm/device/device_collective.h"

namespace {

using namespace plexus::comm;        // NOLINT: the C ABI layer of this namespace
using namespace plexus::comm::capi;  // NOLINT: the shared bodies

// An argument error in a collective on this rank: the call fails here at once, and this rank
// still takes part in the collective's signature comparison (CollectiveOp::refused, run on the
// progress thread), so every other rank fails with PLX_ERROR_MISMATCH naming this one instead of
// waiting out PLEXUS_TIMEOUT_MS for data that will never come, and the communicator stays
// usable on all of them. Inside a group the comparison takes the call's place in the group, and
// the group fails at plx_group_end on every rank (submit.h). Only where that comparison runs
// (PLEXUS_CHECK_ARGS=1, more than one rank), and for collectives (a send or receive has one
// peer, which times out).
plx_result_t refuse(const char* fn, plx_comm* comm, plx_result_t error) {
  if (error != PLX_ERROR_INVALID_ARGUMENT || !comm->check_args || comm->size < 2) {
    return error;
  }
  std::string_view name(fn);
  name.remove_prefix(std::string_view("plx_").size());
  std::optional<Collective> collective = find_collective(name);
  if (!collective && name.starts_with('i')) collective = find_collective(name.substr(1));
  if (!collective) return error;
  const std::string message = plexus::last_error();
  CollectiveOp refused;
  refused.refused = true;
  refused.args.collective = *collective;
  refused.tag_base = comm->next_tag_base();
  submit_refused(comm, refused);
  return plexus::set_error(error, message);
}

// Blocking form: the arguments checked on the caller's pointers, then device buffers and the
// stream (comm/device/device_collective.h), then the shared body with no request on host (or
// pinned staging) buffers. `args_of` builds the call's device::DeviceArgs once comm is known to
// be valid.
template <typename ArgsOf, typename Body>
plx_result_t blocking(const char* fn, plx_comm* comm, void* stream, ArgsOf&& args_of,
                      Body&& body) {
  return guarded(fn, [&]() -> plx_result_t {
    if (!comm) return null_argument(fn, nullptr, "comm");
    const device::DeviceArgs args = args_of();
    plx_result_t checked = PLX_SUCCESS;
    {
      const ArgumentsOnly checking;
      checked = body(args.send, args.recv);
    }
    if (checked != PLX_SUCCESS) return refuse(fn, comm, checked);
    return device::run_collective(fn, comm, stream, args, body);
  });
}

// Non-blocking form: as the blocking form without a stream; the body queues the operation with
// a request. Device buffers are staged through pinned memory of the call's own, copied back when
// the request completes (args.nonblocking; comm/device/device_deferred.h).
template <typename ArgsOf, typename Body>
plx_result_t nonblocking(const char* fn, plx_comm* comm, ArgsOf&& args_of, Body&& body) {
  return guarded(fn, [&]() -> plx_result_t {
    if (!comm) return null_argument(fn, nullptr, "comm");
    device::DeviceArgs args = args_of();
    args.nonblocking = true;
    plx_result_t checked = PLX_SUCCESS;
    {
      const ArgumentsOnly checking;
      checked = body(args.send, args.recv);
    }
    if (checked != PLX_SUCCESS) return refuse(fn, comm, checked);
    return device::run_collective(fn, comm, nullptr, args, body);
  });
}

bool is_root(const plx_comm* comm, int root) { return comm->rank == root; }

}  // namespace

extern "C" {

plx_result_t plx_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                           void* stream) {
  constexpr const char* fn = "plx_allreduce";
  return blocking(
      fn, comm, stream,
      [&] {
        device::DeviceArgs args = device::allreduce_args(sendbuf, recvbuf, count, datatype, op);
        args.range_run = [&](const void* s, void* r, size_t n) {
          return allreduce(fn, s, r, n, datatype, op, comm, nullptr, false);
        };
        return args;
      },
      [&](const void* s, void* r) {
        return allreduce(fn, s, r, count, datatype, op, comm, nullptr, false);
      });
}

plx_result_t plx_iallreduce(const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                            plx_request_t* request) {
  constexpr const char* fn = "plx_iallreduce";
  return nonblocking(
      fn, comm, [&] { return device::allreduce_args(sendbuf, recvbuf, count, datatype, op); },
      [&](const void* s, void* r) {
        return allreduce(fn, s, r, count, datatype, op, comm, request, true);
      });
}

plx_result_t plx_reduce(const void* sendbuf, void* recvbuf, size_t count,
                        plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm_t comm,
                        void* stream) {
  constexpr const char* fn = "plx_reduce";
  return blocking(
      fn, comm, stream,
      [&] {
        device::DeviceArgs args =
            device::reduce_args(sendbuf, recvbuf, count, datatype, is_root(comm, root));
        args.op = op;
        args.root = root;
        args.range_run = [&](const void* s, void* r, size_t n) {
          return reduce(fn, s, r, n, datatype, op, root, comm, nullptr, false);
        };
        return args;
      },
      [&](const void* s, void* r) {
        return reduce(fn, s, r, count, datatype, op, root, comm, nullptr, false);
      });
}

plx_result_t plx_ireduce(const void* sendbuf, void* recvbuf, size_t count,
                         plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm_t comm,
                         plx_request_t* request) {
  constexpr const char* fn = "plx_ireduce";
  return nonblocking(
      fn, comm,
      [&] { return device::reduce_args(sendbuf, recvbuf, count, datatype, is_root(comm, root)); },
      [&](const void* s, void* r) {
        return reduce(fn, s, r, count, datatype, op, root, comm, request, true);
      });
}

plx_result_t plx_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, int root, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_broadcast";
  return blocking(
      fn, comm, stream,
      [&] {
        device::DeviceArgs args =
            device::broadcast_args(sendbuf, recvbuf, count, datatype, is_root(comm, root));
        args.root = root;
        args.range_run = [&](const void* s, void* r, size_t n) {
          return broadcast(fn, s, r, n, datatype, root, comm, nullptr, false);
        };
        return args;
      },
      [&](const void* s, void* r) {
        return broadcast(fn, s, r, count, datatype, root, comm, nullptr, false);
      });
}

plx_result_t plx_ibroadcast(const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, int root, plx_comm_t comm,
                            plx_request_t* request) {
  constexpr const char* fn = "plx_ibroadcast";
  return nonblocking(
      fn, comm,
      [&] {
        return device::broadcast_args(sendbuf, recvbuf, count, datatype, is_root(comm, root));
      },
      [&](const void* s, void* r) {
        return broadcast(fn, s, r, count, datatype, root, comm, request, true);
      });
}

plx_result_t plx_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                                void* stream) {
  constexpr const char* fn = "plx_reduce_scatter";
  return blocking(
      fn, comm, stream,
      [&] {
        device::DeviceArgs args =
            device::reduce_scatter_args(sendbuf, recvbuf, recvcount, datatype, comm->size);
        args.op = op;
        return args;
      },
      [&](const void* s, void* r) {
        return reduce_scatter(fn, s, r, recvcount, datatype, op, comm, nullptr, false);
      });
}

plx_result_t plx_ireduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                 plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                                 plx_request_t* request) {
  constexpr const char* fn = "plx_ireduce_scatter";
  return nonblocking(
      fn, comm,
      [&] {
        return device::reduce_scatter_args(sendbuf, recvbuf, recvcount, datatype, comm->size);
      },
      [&](const void* s, void* r) {
        return reduce_scatter(fn, s, r, recvcount, datatype, op, comm, request, true);
      });
}

plx_result_t plx_allgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                           plx_datatype_t datatype, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_allgather";
  return blocking(
      fn, comm, stream,
      [&] { return device::allgather_args(sendbuf, recvbuf, sendcount, datatype, comm->size); },
      [&](const void* s, void* r) {
        return allgather(fn, s, r, sendcount, datatype, comm, nullptr, false);
      });
}

plx_result_t plx_iallgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                            plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_iallgather";
  return nonblocking(
      fn, comm,
      [&] { return device::allgather_args(sendbuf, recvbuf, sendcount, datatype, comm->size); },
      [&](const void* s, void* r) {
        return allgather(fn, s, r, sendcount, datatype, comm, request, true);
      });
}

plx_result_t plx_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                          plx_datatype_t datatype, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_alltoall";
  return blocking(
      fn, comm, stream,
      [&] { return device::alltoall_args(sendbuf, recvbuf, count, datatype, comm->size); },
      [&](const void* s, void* r) {
        return alltoall(fn, s, r, count, datatype, comm, nullptr, false);
      });
}

plx_result_t plx_ialltoall(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_ialltoall";
  return nonblocking(
      fn, comm,
      [&] { return device::alltoall_args(sendbuf, recvbuf, count, datatype, comm->size); },
      [&](const void* s, void* r) {
        return alltoall(fn, s, r, count, datatype, comm, request, true);
      });
}

plx_result_t plx_alltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                           void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                           plx_datatype_t datatype, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_alltoallv";
  return blocking(
      fn, comm, stream,
      [&] {
        return device::alltoallv_args(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls,
                                      datatype, comm->size);
      },
      [&](const void* s, void* r) {
        return alltoallv(fn, s, sendcounts, sdispls, r, recvcounts, rdispls, datatype, comm,
                         nullptr, false);
      });
}

plx_result_t plx_ialltoallv(const void* sendbuf, const size_t* sendcounts, const size_t* sdispls,
                            void* recvbuf, const size_t* recvcounts, const size_t* rdispls,
                            plx_datatype_t datatype, plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_ialltoallv";
  return nonblocking(
      fn, comm,
      [&] {
        return device::alltoallv_args(sendbuf, sendcounts, sdispls, recvbuf, recvcounts, rdispls,
                                      datatype, comm->size);
      },
      [&](const void* s, void* r) {
        return alltoallv(fn, s, sendcounts, sdispls, r, recvcounts, rdispls, datatype, comm,
                         request, true);
      });
}

plx_result_t plx_gather(const void* sendbuf, void* recvbuf, size_t sendcount,
                        plx_datatype_t datatype, int root, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_gather";
  return blocking(
      fn, comm, stream,
      [&] {
        return device::gather_args(sendbuf, recvbuf, sendcount, datatype, comm->size,
                                   is_root(comm, root));
      },
      [&](const void* s, void* r) {
        return gather(fn, s, r, sendcount, datatype, root, comm, nullptr, false);
      });
}

plx_result_t plx_igather(const void* sendbuf, void* recvbuf, size_t sendcount,
                         plx_datatype_t datatype, int root, plx_comm_t comm,
                         plx_request_t* request) {
  constexpr const char* fn = "plx_igather";
  return nonblocking(
      fn, comm,
      [&] {
        return device::gather_args(sendbuf, recvbuf, sendcount, datatype, comm->size,
                                   is_root(comm, root));
      },
      [&](const void* s, void* r) {
        return gather(fn, s, r, sendcount, datatype, root, comm, request, true);
      });
}

plx_result_t plx_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                         plx_datatype_t datatype, int root, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_scatter";
  return blocking(
      fn, comm, stream,
      [&] {
        return device::scatter_args(sendbuf, recvbuf, recvcount, datatype, comm->size,
                                    is_root(comm, root));
      },
      [&](const void* s, void* r) {
        return scatter(fn, s, r, recvcount, datatype, root, comm, nullptr, false);
      });
}

plx_result_t plx_iscatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                          plx_datatype_t datatype, int root, plx_comm_t comm,
                          plx_request_t* request) {
  constexpr const char* fn = "plx_iscatter";
  return nonblocking(
      fn, comm,
      [&] {
        return device::scatter_args(sendbuf, recvbuf, recvcount, datatype, comm->size,
                                    is_root(comm, root));
      },
      [&](const void* s, void* r) {
        return scatter(fn, s, r, recvcount, datatype, root, comm, request, true);
      });
}

plx_result_t plx_send(const void* sendbuf, size_t count, plx_datatype_t datatype, int peer,
                      plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_send";
  return blocking(
      fn, comm, stream,
      [&] {
        device::DeviceArgs args = device::send_args(sendbuf, count, datatype);
        args.peer = peer;
        args.range_run = [&](const void* s, void*, size_t n) {
          return p2p(fn, true, s, n, datatype, peer, comm, nullptr, false);
        };
        return args;
      },
      [&](const void* s, void*) {
        return p2p(fn, true, s, count, datatype, peer, comm, nullptr, false);
      });
}

plx_result_t plx_isend(const void* sendbuf, size_t count, plx_datatype_t datatype, int peer,
                       plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_isend";
  return nonblocking(
      fn, comm, [&] { return device::send_args(sendbuf, count, datatype); },
      [&](const void* s, void*) {
        return p2p(fn, true, s, count, datatype, peer, comm, request, true);
      });
}

plx_result_t plx_recv(void* recvbuf, size_t count, plx_datatype_t datatype, int peer,
                      plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_recv";
  return blocking(
      fn, comm, stream,
      [&] {
        device::DeviceArgs args = device::recv_args(recvbuf, count, datatype);
        args.peer = peer;
        args.range_run = [&](const void*, void* r, size_t n) {
          return p2p(fn, false, r, n, datatype, peer, comm, nullptr, false);
        };
        return args;
      },
      [&](const void*, void* r) {
        return p2p(fn, false, r, count, datatype, peer, comm, nullptr, false);
      });
}

plx_result_t plx_irecv(void* recvbuf, size_t count, plx_datatype_t datatype, int peer,
                       plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_irecv";
  return nonblocking(
      fn, comm, [&] { return device::recv_args(recvbuf, count, datatype); },
      [&](const void*, void* r) {
        return p2p(fn, false, r, count, datatype, peer, comm, request, true);
      });
}

plx_result_t plx_barrier(plx_comm_t comm) {
  constexpr const char* fn = "plx_barrier";
  return guarded(fn, [&] { return barrier(fn, comm, nullptr, false); });
}

plx_result_t plx_ibarrier(plx_comm_t comm, plx_request_t* request) {
  constexpr const char* fn = "plx_ibarrier";
  return guarded(fn, [&] { return barrier(fn, comm, request, true); });
}

}  // extern "C"
