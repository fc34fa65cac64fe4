// runner.h - the benchmark loop shared by every collective.
//
// For each datatype, op and message size, out of place and then in place:
//  1. fill the inputs (Collective::input) and barrier;
//  2. run warmup_iters untimed, barrier, then iters timed back to back; the row's time is the
//     mean per iteration, maximum over ranks (plx_allreduce MAX of each rank's mean);
//  3. with -c 1: refill, run once, count the checked elements of the receive buffer that differ
//     from Collective::expected (exactly; avg on float types within one unit in the last place) and
//     sum the count over ranks.
// algbw = size / time (GB/s with 1 GB = 1e9 B, size = row_bytes), busbw = algbw *
// Collective::bus_factor(n). plx_comm_last_algorithm after the timed loop names the algorithm.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "perf/harness/collective.h"
#include "perf/harness/options.h"
#include "plexus/plexus.h"

namespace plexus::bench {

// A Plexus call failed: what() is "plx_allreduce failed: PLX_ERROR_REMOTE: ...: <last error>".
class PlexusFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws PlexusFailure if result is not PLX_SUCCESS.
void check_plexus(plx_result_t result, const char* call);

// The size column and the bytes algbw divides by the time: the larger of the send and receive
// buffers (nccl-tests' max(sendBytes, recvBytes)).
size_t row_bytes(const Collective& collective, const CaseParams& p);

// Elements of rank p.rank's receive buffer that differ from Collective::expected: exactly, except
// avg on float types, which may differ by one unit in the last place (rounding of the division).
int64_t count_wrong(const Collective& collective, const CaseParams& p, const void* recv);

struct BenchOutcome {
  int64_t total_wrong = 0;     // #wrong over all rows and ranks, the same on every rank
  bool report_written = true;  // false if rank 0 could not write the JSON file
};

// Runs the whole benchmark on comm; rank 0 prints the report. Throws PlexusFailure.
BenchOutcome run_benchmark(const Collective& collective, const BenchOptions& options,
                           plx_comm_t comm);

}  // namespace plexus::bench
