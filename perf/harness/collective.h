// collective.h - what one benchmarked collective tells the shared harness.
//
// A collective (perf/collectives/<name>.cpp, about a page) says how to call it, how big its
// buffers are, what each rank's input is and what each rank must hold afterwards, and its bus
// bandwidth factor. The harness (runner.h) does the rest: sizes, warmup, timing, the maximum
// over ranks, the check and the report.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace plexus::bench {

// One row of the table.
struct CaseParams {
  size_t count = 0;  // the "count" column (nccl-tests): see Collective::count_column
  plx_datatype_t datatype = PLX_FLOAT32;
  plx_red_op_t op = PLX_SUM;  // meaningful when has_op()
  int root = 0;               // meaningful when has_root()
  int rank = 0;
  int nranks = 1;
};

class Collective {
 public:
  virtual ~Collective() = default;

  virtual std::string name() const = 0;
  virtual bool has_op() const = 0;    // else the redop column says "none" and -o is ignored
  virtual bool has_root() const = 0;  // else the root column says -1
  // busbw = algbw * bus_factor(n): the bytes each link must carry relative to the message size,
  // so busbw is comparable to the link bandwidth (nccl-tests doc/PERFORMANCE.md).
  virtual double bus_factor(int nranks) const = 0;

  // The count column for a message of `elements` elements (the -b..-e size over the element
  // size): the collective's count argument. nccl-tests uses elements / n for the collectives
  // whose count is per rank (allgather, reduce_scatter, alltoall, gather, scatter).
  virtual size_t count_column(size_t elements, int nranks) const { return elements; }

  // Elements in this rank's send and receive buffers for a row. The size column, and the bytes
  // algbw divides by the time, are the larger of the two (nccl-tests' max(sendBytes, recvBytes)).
  virtual size_t send_count(const CaseParams& p) const { return p.count; }
  virtual size_t recv_count(const CaseParams& p) const { return p.count; }
  // In place, both live in one buffer: send starts this many elements in, and recv that many.
  virtual size_t in_place_send_offset(const CaseParams& p) const { return 0; }
  virtual size_t in_place_recv_offset(const CaseParams& p) const { return 0; }
  // Leading elements of the receive buffer that the check compares (0 where this rank receives
  // nothing, as a reduce or gather on a rank that is not the root).
  virtual size_t checked_count(const CaseParams& p) const { return recv_count(p); }
  // False where the in-place result is undefined, so its #wrong shows N/A as in nccl-tests
  // (sendrecv: the receive may overwrite data the send has not read yet).
  virtual bool in_place_checked() const { return true; }

  // Element i of rank `rank`'s input (small integers, so every datatype holds them exactly).
  virtual double input(const CaseParams& p, int rank, size_t i) const = 0;
  // What element i of rank p.rank's receive buffer must hold afterwards.
  virtual double expected(const CaseParams& p, size_t i) const = 0;

  // Runs the collective once. In place when send and recv sit at the in-place offsets of one
  // buffer.
  virtual plx_result_t run(const void* send, void* recv, const CaseParams& p,
                           plx_comm_t comm) const = 0;
};

// A rank- and index-dependent small integer in 0..m-1, where m shrinks with nranks so that a sum
// over all ranks stays below 256 (exact in bfloat16, no int8/uint8 wrap) for up to 120 ranks.
double pattern_value(int rank, size_t i, int nranks);

}  // namespace plexus::bench
