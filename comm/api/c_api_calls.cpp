// c_api_calls.cpp - see c_api_calls.h.
#include "comm/api/c_api_calls.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "comm/api/c_api_checks.h"
#include "comm/core/communicator.h"
#include "comm/core/submit.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm::capi {

namespace {

size_t elem_bytes(plx_datatype_t datatype) { return plx_datatype_size(datatype); }

const unsigned char* offset(const void* base, size_t elements, plx_datatype_t datatype) {
  return static_cast<const unsigned char*>(base) + elements * elem_bytes(datatype);
}

// The argument checks every collective starts with.
plx_result_t check_common(const char* fn, plx_comm* comm, plx_datatype_t datatype,
                          plx_request_t* request, bool nonblocking) {
  if (!comm) return null_argument(fn, nullptr, "comm");
  if (nonblocking && !request) return null_argument(fn, comm, "request");
  return check_datatype(fn, comm, datatype);
}

// Sets op, or the pre-multiplied sum's scalar, on a reducing collective (op checked).
void set_op(plx_comm* comm, plx_red_op_t op, CollectiveOp* out) {
  if (static_cast<int>(op) < PLX_NUM_OPS) {
    out->args.op = op;
    return;
  }
  const auto& premul = comm->premul_ops.at(static_cast<int>(op));
  out->args.op = PLX_SUM;
  out->premul = true;
  std::memcpy(out->premul_scalar, premul.scalar, sizeof(out->premul_scalar));
}

plx_result_t number_and_submit(plx_comm* comm, CollectiveOp& op, plx_request_t* request) {
  op.tag_base = comm->next_tag_base();
  return submit_collective(comm, op, request);
}

// The extent (largest displacement + count) of one side of an alltoallv, in elements.
plx_result_t alltoallv_extent(const char* fn, plx_comm* comm, const char* side,
                              const size_t* counts, const size_t* displs, size_t* extent) {
  *extent = 0;
  for (int j = 0; j < comm->size; ++j) {
    if (displs[j] > SIZE_MAX - counts[j]) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: {} displacement {} + count {} for rank {} "
                                   "overflows size_t",
                                   fn, comm->rank, side, displs[j], counts[j], j));
    }
    if (counts[j] > 0) *extent = std::max(*extent, displs[j] + counts[j]);
  }
  return PLX_SUCCESS;
}

}  // namespace

// ---- Argument checks

plx_result_t check_allreduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                             plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                             plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  PLX_CHECK(check_op(fn, comm, op, datatype));
  PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, count, datatype));
  PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, count, datatype));
  const size_t bytes = count * elem_bytes(datatype);
  if (sendbuf != recvbuf) {
    PLX_CHECK(check_overlap(fn, comm, sendbuf, bytes, recvbuf, bytes, "sendbuf", "recvbuf"));
  }
  return PLX_SUCCESS;
}

plx_result_t check_reduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                          plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm* comm,
                          plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  PLX_CHECK(check_op(fn, comm, op, datatype));
  PLX_CHECK(check_rank(fn, comm, "root", root));
  PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, count, datatype));
  if (comm->rank == root) {
    PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, count, datatype));
    const size_t bytes = count * elem_bytes(datatype);
    if (sendbuf != recvbuf) {
      PLX_CHECK(check_overlap(fn, comm, sendbuf, bytes, recvbuf, bytes, "sendbuf", "recvbuf"));
    }
  }
  return PLX_SUCCESS;
}

plx_result_t check_broadcast(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                             plx_datatype_t datatype, int root, plx_comm* comm,
                             plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  PLX_CHECK(check_rank(fn, comm, "root", root));
  PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, count, datatype));
  if (comm->rank == root) {
    PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, count, datatype));
    const size_t bytes = count * elem_bytes(datatype);
    if (sendbuf != recvbuf) {
      PLX_CHECK(check_overlap(fn, comm, sendbuf, bytes, recvbuf, bytes, "sendbuf", "recvbuf"));
    }
  }
  return PLX_SUCCESS;
}

plx_result_t check_reduce_scatter(const char* fn, const void* sendbuf, void* recvbuf,
                                  size_t recvcount, plx_datatype_t datatype, plx_red_op_t op,
                                  plx_comm* comm, plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  PLX_CHECK(check_op(fn, comm, op, datatype));
  size_t total = 0;
  PLX_CHECK(check_count_times(fn, comm, "recvcount", recvcount, comm->size, &total));
  PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, total, datatype));
  PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, recvcount, datatype));
  if (recvbuf != offset(sendbuf, recvcount * comm->rank, datatype)) {
    PLX_CHECK(check_overlap(fn, comm, sendbuf, total * elem_bytes(datatype), recvbuf,
                            recvcount * elem_bytes(datatype), "sendbuf", "recvbuf"));
  }
  return PLX_SUCCESS;
}

plx_result_t check_allgather(const char* fn, const void* sendbuf, void* recvbuf,
                             size_t sendcount, plx_datatype_t datatype, plx_comm* comm,
                             plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  size_t total = 0;
  PLX_CHECK(check_count_times(fn, comm, "sendcount", sendcount, comm->size, &total));
  PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, sendcount, datatype));
  PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, total, datatype));
  if (sendbuf != offset(recvbuf, sendcount * comm->rank, datatype)) {
    PLX_CHECK(check_overlap(fn, comm, sendbuf, sendcount * elem_bytes(datatype), recvbuf,
                            total * elem_bytes(datatype), "sendbuf", "recvbuf"));
  }
  return PLX_SUCCESS;
}

plx_result_t check_alltoall(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, plx_comm* comm, plx_request_t* request,
                            bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  size_t total = 0;
  PLX_CHECK(check_count_times(fn, comm, "count", count, comm->size, &total));
  PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, total, datatype));
  PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, total, datatype));
  const size_t bytes = total * elem_bytes(datatype);
  if (sendbuf != recvbuf) {
    PLX_CHECK(check_overlap(fn, comm, sendbuf, bytes, recvbuf, bytes, "sendbuf", "recvbuf"));
  }
  return PLX_SUCCESS;
}

plx_result_t check_alltoallv(const char* fn, const void* sendbuf, const size_t* sendcounts,
                             const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                             const size_t* rdispls, plx_datatype_t datatype, plx_comm* comm,
                             plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  if (!sendcounts) return null_argument(fn, comm, "sendcounts");
  if (!sdispls) return null_argument(fn, comm, "sdispls");
  if (!recvcounts) return null_argument(fn, comm, "recvcounts");
  if (!rdispls) return null_argument(fn, comm, "rdispls");
  size_t send_extent = 0;
  size_t recv_extent = 0;
  PLX_CHECK(alltoallv_extent(fn, comm, "send", sendcounts, sdispls, &send_extent));
  PLX_CHECK(alltoallv_extent(fn, comm, "recv", recvcounts, rdispls, &recv_extent));
  PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, send_extent, datatype));
  PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, recv_extent, datatype));
  if (sendbuf && sendbuf == recvbuf && send_extent > 0 && recv_extent > 0) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: sendbuf == recvbuf {}; alltoallv is not "
                                 "supported in place",
                                 fn, comm->rank, sendbuf));
  }
  return check_overlap(fn, comm, sendbuf, send_extent * elem_bytes(datatype), recvbuf,
                       recv_extent * elem_bytes(datatype), "sendbuf", "recvbuf");
}

plx_result_t check_gather(const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                          plx_datatype_t datatype, int root, plx_comm* comm,
                          plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  PLX_CHECK(check_rank(fn, comm, "root", root));
  size_t total = 0;
  PLX_CHECK(check_count_times(fn, comm, "sendcount", sendcount, comm->size, &total));
  PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, sendcount, datatype));
  if (comm->rank == root) {
    PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, total, datatype));
    if (sendbuf != offset(recvbuf, sendcount * root, datatype)) {
      PLX_CHECK(check_overlap(fn, comm, sendbuf, sendcount * elem_bytes(datatype), recvbuf,
                              total * elem_bytes(datatype), "sendbuf", "recvbuf"));
    }
  }
  return PLX_SUCCESS;
}

plx_result_t check_scatter(const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                           plx_datatype_t datatype, int root, plx_comm* comm,
                           plx_request_t* request, bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  PLX_CHECK(check_rank(fn, comm, "root", root));
  size_t total = 0;
  PLX_CHECK(check_count_times(fn, comm, "recvcount", recvcount, comm->size, &total));
  PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, recvcount, datatype));
  if (comm->rank == root) {
    PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, total, datatype));
    if (recvbuf != offset(sendbuf, recvcount * root, datatype)) {
      PLX_CHECK(check_overlap(fn, comm, sendbuf, total * elem_bytes(datatype), recvbuf,
                              recvcount * elem_bytes(datatype), "sendbuf", "recvbuf"));
    }
  }
  return PLX_SUCCESS;
}

plx_result_t check_barrier(const char* fn, plx_comm* comm, plx_request_t* request,
                           bool nonblocking) {
  if (!comm) return null_argument(fn, nullptr, "comm");
  if (nonblocking && !request) return null_argument(fn, comm, "request");
  return PLX_SUCCESS;
}

plx_result_t check_p2p(const char* fn, bool is_send, const void* buf, size_t count,
                       plx_datatype_t datatype, int peer, plx_comm* comm, plx_request_t* request,
                       bool nonblocking) {
  PLX_CHECK(check_common(fn, comm, datatype, request, nonblocking));
  PLX_CHECK(check_rank(fn, comm, "peer", peer));
  return check_buffer(fn, comm, is_send ? "sendbuf" : "recvbuf", buf, count, datatype);
}

// ---- Submission of checked calls

plx_result_t submit_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                              plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                              plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Allreduce, sendbuf, recvbuf, count, datatype};
  set_op(comm, op, &call);
  return number_and_submit(comm, call, request);
}

plx_result_t submit_reduce(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm* comm,
                           plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Reduce, sendbuf, recvbuf, count, datatype, PLX_SUM, root};
  set_op(comm, op, &call);
  return number_and_submit(comm, call, request);
}

plx_result_t submit_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                              plx_datatype_t datatype, int root, plx_comm* comm,
                              plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Broadcast, sendbuf, recvbuf, count, datatype, PLX_SUM, root};
  return number_and_submit(comm, call, request);
}

plx_result_t submit_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                   plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                                   plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::ReduceScatter, sendbuf, recvbuf, recvcount, datatype};
  set_op(comm, op, &call);
  return number_and_submit(comm, call, request);
}

plx_result_t submit_allgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                              plx_datatype_t datatype, plx_comm* comm, plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Allgather, sendbuf, recvbuf, sendcount, datatype};
  return number_and_submit(comm, call, request);
}

plx_result_t submit_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                             plx_datatype_t datatype, plx_comm* comm, plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Alltoall, sendbuf, recvbuf, count, datatype};
  return number_and_submit(comm, call, request);
}

plx_result_t submit_alltoallv(const void* sendbuf, const size_t* sendcounts,
                              const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                              const size_t* rdispls, plx_datatype_t datatype, plx_comm* comm,
                              plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Alltoallv, sendbuf, recvbuf, 0, datatype};
  call.args.sendcounts = sendcounts;
  call.args.sdispls = sdispls;
  call.args.recvcounts = recvcounts;
  call.args.rdispls = rdispls;
  return number_and_submit(comm, call, request);
}

plx_result_t submit_gather(const void* sendbuf, void* recvbuf, size_t sendcount,
                           plx_datatype_t datatype, int root, plx_comm* comm,
                           plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Gather, sendbuf, recvbuf, sendcount, datatype, PLX_SUM, root};
  return number_and_submit(comm, call, request);
}

plx_result_t submit_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                            plx_datatype_t datatype, int root, plx_comm* comm,
                            plx_request_t* request) {
  CollectiveOp call;
  call.args = CollArgs{Collective::Scatter, sendbuf, recvbuf, recvcount, datatype, PLX_SUM, root};
  return number_and_submit(comm, call, request);
}

plx_result_t submit_barrier(plx_comm* comm, plx_request_t* request) {
  CollectiveOp call;
  call.args.collective = Collective::Barrier;
  return number_and_submit(comm, call, request);
}

plx_result_t submit_p2p(bool is_send, const void* buf, size_t count, plx_datatype_t datatype,
                        int peer, plx_comm* comm, plx_request_t* request) {
  P2POp op;
  op.is_send = is_send;
  op.peer = peer;
  op.buf = const_cast<void*>(buf);
  op.bytes = count * elem_bytes(datatype);
  op.tag = is_send ? comm->next_send_tag(peer) : comm->next_recv_tag(peer);
  return plexus::comm::submit_p2p(comm, op, request);
}

}  // namespace plexus::comm::capi
