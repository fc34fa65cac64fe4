// device_args.h - the DeviceArgs (device_collective.h) of each collective and point-to-point
// call: which buffers this rank reads and writes, and how many elements of each.
//
// Extents follow the layouts of include/plexus/plexus.h: n-block buffers hold n * count
// elements; a buffer used only on the root counts 0 elsewhere. Products that overflow give
// SIZE_MAX, which the staged path refuses to stage, so the host call reports the argument error.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "comm/device/device_collective.h"

namespace plexus::comm::device {

inline size_t times_or_max(size_t a, size_t b) {
  return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b;
}

// `count` is the call's count as its signature has it (DeviceArgs::count), where one is needed.
inline DeviceArgs make_args(Collective collective, plx_datatype_t datatype, const void* send,
                            size_t send_count, void* recv, size_t recv_count, size_t count = 0) {
  DeviceArgs args;
  args.count = count;
  args.collective = collective;
  args.datatype = datatype;
  args.send = send;
  args.send_count = send_count;
  args.recv = recv;
  args.recv_count = recv_count;
  return args;
}

inline DeviceArgs allreduce_args(const void* send, void* recv, size_t count,
                                 plx_datatype_t datatype, plx_red_op_t op) {
  DeviceArgs args = make_args(Collective::Allreduce, datatype, send, count, recv, count, count);
  args.op = op;
  return args;
}

inline DeviceArgs reduce_args(const void* send, void* recv, size_t count, plx_datatype_t datatype,
                              bool is_root) {
  return make_args(Collective::Reduce, datatype, send, count, recv, is_root ? count : 0, count);
}

inline DeviceArgs broadcast_args(const void* send, void* recv, size_t count,
                                 plx_datatype_t datatype, bool is_root) {
  return make_args(Collective::Broadcast, datatype, send, is_root ? count : 0, recv, count,
                   count);
}

inline DeviceArgs reduce_scatter_args(const void* send, void* recv, size_t recvcount,
                                      plx_datatype_t datatype, int n) {
  return make_args(Collective::ReduceScatter, datatype, send,
                   times_or_max(recvcount, static_cast<size_t>(n)), recv, recvcount, recvcount);
}

inline DeviceArgs allgather_args(const void* send, void* recv, size_t sendcount,
                                 plx_datatype_t datatype, int n) {
  return make_args(Collective::Allgather, datatype, send, sendcount, recv,
                   times_or_max(sendcount, static_cast<size_t>(n)), sendcount);
}

inline DeviceArgs alltoall_args(const void* send, void* recv, size_t count,
                                plx_datatype_t datatype, int n) {
  const size_t total = times_or_max(count, static_cast<size_t>(n));
  return make_args(Collective::Alltoall, datatype, send, total, recv, total);
}

// Largest displacement + count over the n entries (0 when an array is NULL: the host call
// reports it).
inline size_t alltoallv_extent(const size_t* counts, const size_t* displs, int n) {
  if (counts == nullptr || displs == nullptr) return 0;
  size_t extent = 0;
  for (int j = 0; j < n; ++j) {
    if (counts[j] == 0) continue;
    extent = std::max(extent, displs[j] > SIZE_MAX - counts[j] ? SIZE_MAX : displs[j] + counts[j]);
  }
  return extent;
}

inline DeviceArgs alltoallv_args(const void* send, const size_t* sendcounts,
                                 const size_t* sdispls, void* recv, const size_t* recvcounts,
                                 const size_t* rdispls, plx_datatype_t datatype, int n) {
  DeviceArgs args =
      make_args(Collective::Alltoallv, datatype, send, alltoallv_extent(sendcounts, sdispls, n),
                recv, alltoallv_extent(recvcounts, rdispls, n));
  args.recv_read = true;  // elements between the blocks keep their values
  return args;
}

inline DeviceArgs gather_args(const void* send, void* recv, size_t sendcount,
                              plx_datatype_t datatype, int n, bool is_root) {
  return make_args(Collective::Gather, datatype, send, sendcount, recv,
                   is_root ? times_or_max(sendcount, static_cast<size_t>(n)) : 0);
}

inline DeviceArgs scatter_args(const void* send, void* recv, size_t recvcount,
                               plx_datatype_t datatype, int n, bool is_root) {
  return make_args(Collective::Scatter, datatype, send,
                   is_root ? times_or_max(recvcount, static_cast<size_t>(n)) : 0, recv,
                   recvcount);
}

// plx_send reads `count` elements; plx_recv writes them (collective is unused for these).
inline DeviceArgs send_args(const void* send, size_t count, plx_datatype_t datatype) {
  return make_args(Collective::Barrier, datatype, send, count, nullptr, 0);
}
inline DeviceArgs recv_args(void* recv, size_t count, plx_datatype_t datatype) {
  return make_args(Collective::Barrier, datatype, nullptr, 0, recv, count);
}

}  // namespace plexus::comm::device
