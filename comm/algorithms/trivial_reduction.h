// trivial_reduction.h - a reduction that needs no message (algorithms.h: an algorithm must still
// copy sendbuf to recvbuf on one rank).
//
//   if (reduce_trivially(args, transport.size())) return PLX_SUCCESS;
#pragma once

#include <cstring>

#include "comm/algorithms/algorithms.h"
#include "comm/reduce/reduce.h"

namespace plexus::comm {

// Finishes the reduction of args.count elements (allreduce, reduce, reduce-scatter) when no
// message is needed, and says so: count 0 does nothing, and a single rank copies sendbuf to
// recvbuf unless they are the same (the sum of one contribution; PLX_AVG divides by 1).
inline bool reduce_trivially(const CollArgs& args, int n) {
  if (args.count == 0) return true;
  if (n != 1) return false;
  if (args.sendbuf != args.recvbuf) {
    std::memcpy(args.recvbuf, args.sendbuf, args.count * datatype_bytes(args.datatype));
  }
  return true;
}

}  // namespace plexus::comm
