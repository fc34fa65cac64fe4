// c_api_calls.h - the body every collective and point-to-point call of the C ABI shares between
// its blocking and non-blocking forms: check the arguments on the calling thread (nothing is sent
// when one is wrong, so the communicator stays usable), fix the call's tag base (call order is
// the order on every rank), and hand the operation to submit.h: run now (request NULL), queue
// with a request, or join the open group. Buffers are host memory here; device buffers were
// staged before (comm/device/device_collective.h). c_api_collectives.cpp holds the entry points.
#pragma once

#include <cstddef>

#include "plexus/plexus.h"

struct plx_comm;

namespace plexus::comm::capi {

plx_result_t allreduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                       plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                       plx_request_t* request, bool nonblocking);
plx_result_t reduce(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                    plx_datatype_t datatype, plx_red_op_t op, int root, plx_comm* comm,
                    plx_request_t* request, bool nonblocking);
plx_result_t broadcast(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                       plx_datatype_t datatype, int root, plx_comm* comm, plx_request_t* request,
                       bool nonblocking);
plx_result_t reduce_scatter(const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                            plx_datatype_t datatype, plx_red_op_t op, plx_comm* comm,
                            plx_request_t* request, bool nonblocking);
plx_result_t allgather(const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                       plx_datatype_t datatype, plx_comm* comm, plx_request_t* request,
                       bool nonblocking);
plx_result_t alltoall(const char* fn, const void* sendbuf, void* recvbuf, size_t count,
                      plx_datatype_t datatype, plx_comm* comm, plx_request_t* request,
                      bool nonblocking);
plx_result_t alltoallv(const char* fn, const void* sendbuf, const size_t* sendcounts,
                       const size_t* sdispls, void* recvbuf, const size_t* recvcounts,
                       const size_t* rdispls, plx_datatype_t datatype, plx_comm* comm,
                       plx_request_t* request, bool nonblocking);
plx_result_t gather(const char* fn, const void* sendbuf, void* recvbuf, size_t sendcount,
                    plx_datatype_t datatype, int root, plx_comm* comm, plx_request_t* request,
                    bool nonblocking);
plx_result_t scatter(const char* fn, const void* sendbuf, void* recvbuf, size_t recvcount,
                     plx_datatype_t datatype, int root, plx_comm* comm, plx_request_t* request,
                     bool nonblocking);
plx_result_t barrier(const char* fn, plx_comm* comm, plx_request_t* request, bool nonblocking);
// plx_send (is_send) or plx_recv.
plx_result_t p2p(const char* fn, bool is_send, const void* buf, size_t count,
                 plx_datatype_t datatype, int peer, plx_comm* comm, plx_request_t* request,
                 bool nonblocking);

// While one lives on the calling thread, the bodies above only check their arguments: they
// return the first bad argument's error, or PLX_SUCCESS without running, queueing or numbering
// anything. The blocking entry points check so before the device layer looks at the stream and
// the buffers, so that a bad datatype, root or count is reported as such with a stream too.
class ArgumentsOnly {
 public:
  ArgumentsOnly();
  ~ArgumentsOnly();
  ArgumentsOnly(const ArgumentsOnly&) = delete;
  ArgumentsOnly& operator=(const ArgumentsOnly&) = delete;
};

}  // namespace plexus::comm::capi
