// c_api_calls.h - the two halves every collective and point-to-point call of the C ABI shares
// between its blocking and non-blocking forms: check_X() checks the arguments on the calling
// thread (nothing is numbered or sent when one is wrong, so the communicator stays usable), and
// submit_X() fixes the call's tag base (call order is the order on every rank) and hands the
// operation to submit.h: run now (request NULL), queue with a request, or join the open group.
//
// c_api_collectives.cpp holds the entry points: check_X() on the caller's pointers first, then
// the device layer (comm/device/device_collective.h), which calls submit_X() on host buffers:
// the caller's own, or the pinned staging it copied device buffers to. submit_X() checks
// nothing: it takes arguments check_X() accepted (or, from the device layer, their staged copies
// and ranges of them).
#pragma once

#include <cstddef>

#include "plexus/plexus.h"

struct plx_comm;

namespace plexus::comm::capi {

// Argument checks. PLX_SUCCESS, or the first bad argument's error, its message naming the
// function `fn`, the rank, the argument and its value ("plx_reduce: rank 3: root 9 not in 0..7";
// c_api_checks.h). `nonblocking`: the non-blocking form, whose `request` must not be NULL.
// Nothing is written, numbered or queued.
plx_result_t check_allreduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                             plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                             plx_request_t* request, bool nonblocking);
plx_result_t check_reduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                          plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm* comm,
                          plx_request_t* request, bool nonblocking);
plx_result_t check_broadcast(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                             plx_datatype_t datatype, int root, plx_comm* comm,
                             plx_request_t* request, bool nonblocking);
plx_result_t check_reduce_scatter(const char* fn, const void* sendbuf, void* recvbuf,
                                  size_t recvcount, plx_datatype_t datatype, plx_red_op_t op,
                                  plx_comm* comm, plx_request_t* request, bool nonblocking);
plx_result_t check_allgather(const char* fn, const void* sendbuf, void* recvbuf,
                             size_t sendcount, plx_datatype_t datatype, plx_comm* comm,
                             plx_request_t* request, bool nonblocking);
plx_result_t check_alltoall(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                            plx_datatype_t datatype, plx_comm* comm, plx_request_t* request,
                            bool nonblocking);
plx_result_t check_alltoallv(const char* fn, const void* sendbuf, const size_t* sendcounts,
                             const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                             const size_t* rdispls, plx_datatype_t datatype, plx_comm* comm,
                             plx_request_t* request, bool nonblocking);
plx_result_t check_gather(const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                          plx_datatype_t datatype, int root, plx_comm* comm,
                          plx_request_t* request, bool nonblocking);
plx_result_t check_scatter(const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                           plx_datatype_t datatype, int root, plx_comm* comm,
                           plx_request_t* request, bool nonblocking);
plx_result_t check_barrier(const char* fn, plx_comm* comm, plx_request_t* request,
                           bool nonblocking);
// plx_send (is_send) or plx_recv.
plx_result_t check_p2p(const char* fn, bool is_send, const void* buf, size_t count,
                       plx_datatype_t datatype, int peer, plx_comm* comm, plx_request_t* request,
                       bool nonblocking);

// Submission of a checked call (see above): the operation runs now and its result is returned
// (`request` NULL, outside a group), is queued and *request set, or joins the open group.
plx_result_t submit_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                              plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                              plx_request_t* request);
plx_result_t submit_reduce(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm* comm,
                           plx_request_t* request);
plx_result_t submit_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                              plx_datatype_t datatype, int root, plx_comm* comm,
                              plx_request_t* request);
plx_result_t submit_reduce_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                                   plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                                   plx_request_t* request);
plx_result_t submit_allgather(const void* sendbuf, void* recvbuf, size_t sendcount,
                              plx_datatype_t datatype, plx_comm* comm, plx_request_t* request);
plx_result_t submit_alltoall(const void* sendbuf, void* recvbuf, size_t count,
                             plx_datatype_t datatype, plx_comm* comm, plx_request_t* request);
plx_result_t submit_alltoallv(const void* sendbuf, const size_t* sendcounts,
                              const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                              const size_t* rdispls, plx_datatype_t datatype, plx_comm* comm,
                              plx_request_t* request);
plx_result_t submit_gather(const void* sendbuf, void* recvbuf, size_t sendcount,
                           plx_datatype_t datatype, int root, plx_comm* comm,
                           plx_request_t* request);
plx_result_t submit_scatter(const void* sendbuf, void* recvbuf, size_t recvcount,
                            plx_datatype_t datatype, int root, plx_comm* comm,
                            plx_request_t* request);
plx_result_t submit_barrier(plx_comm* comm, plx_request_t* request);
plx_result_t submit_p2p(bool is_send, const void* buf, size_t count, plx_datatype_t datatype,
                        int peer, plx_comm* comm, plx_request_t* request);

}  // namespace plexus::comm::capi
