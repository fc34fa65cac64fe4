// plexus-bench - nccl-tests-style bandwidth benchmark of the Plexus collectives.
//
//   plexus-run -n 4 plexus-bench COLLECTIVE -b 8 -e 128M -f 2 [-d float] [-o sum] [-r 0]
//                                [-a allreduce:ring] [-J out.json]
// COLLECTIVE: allreduce, broadcast, reduce, reduce_scatter, allgather, alltoall, gather, scatter,
// sendrecv (perf/collectives/, one file each).
//
// Every process is one rank: it joins the world communicator from the launcher's environment
// (plexus-run, mpirun, srun or torchrun; see plx_comm_init_from_env), and rank 0 prints the
// table. Exit codes: 0 all results correct; 1 a wrong result, a failed Plexus call (its message
// is printed) or an unwritable JSON file; 2 bad usage. See perf/README.md.
#include <new>
#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>

#include "perf/collectives/collectives.h"
#include "perf/harness/options.h"
#include "perf/harness/runner.h"

namespace {

using plexus::bench::Collective;

const std::map<std::string, std::function<std::unique_ptr<Collective>()>>& collectives() {
  static const std::map<std::string, std::function<std::unique_ptr<Collective>()>> table{
      {"allreduce", plexus::bench::make_allreduce},
      {"broadcast", plexus::bench::make_broadcast},
      {"reduce", plexus::bench::make_reduce},
      {"reduce_scatter", plexus::bench::make_reduce_scatter},
      {"allgather", plexus::bench::make_allgather},
      {"alltoall", plexus::bench::make_alltoall},
      {"gather", plexus::bench::make_gather},
      {"scatter", plexus::bench::make_scatter},
      {"sendrecv", plexus::bench::make_sendrecv},
  };
  return table;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace plexus::bench;
  std::vector<std::string> names;
  for (const auto& [name, make] : collectives()) names.push_back(name);
  BenchOptions options;
  if (int code = parse_options(argc, argv, names, &options); code >= 0) return code;
  std::unique_ptr<Collective> collective = collectives().at(options.collective)();

  plx_comm_t comm = nullptr;
  if (plx_result_t r = plx_comm_init_from_env(&comm); r != PLX_SUCCESS) {
    fmt::print(stderr, "plexus-bench: plx_comm_init_from_env failed: {}: {}\n",
               plx_get_error_string(r), plx_get_last_error(nullptr));
    return 1;
  }
  int rank = 0, nranks = 1;
  plx_comm_rank(comm, &rank);
  plx_comm_size(comm, &nranks);
  if (collective->has_root() && options.root >= nranks) {
    fmt::print(stderr, "plexus-bench: rank {}: -r {} not in 0..{}\n", rank, options.root,
               nranks - 1);
    plx_comm_destroy(comm);
    return 2;
  }

  if (!options.algorithm.empty()) {
    if (plx_result_t r = plx_comm_set_algorithm(comm, options.algorithm.c_str());
        r != PLX_SUCCESS) {
      fmt::print(stderr, "plexus-bench: rank {}: -a {}: {}\n", rank, options.algorithm,
                 plx_get_last_error(nullptr));
      plx_comm_destroy(comm);
      return 2;
    }
  }

  BenchOutcome outcome;
  try {
    outcome = run_benchmark(*collective, options, comm);
  } catch (const PlexusFailure& e) {
    fmt::print(stderr, "plexus-bench: rank {}: {}\n", rank, e.what());
    plx_comm_abort(comm);
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "plexus-bench: rank {}: out of memory allocating the buffers for -e {} "
                       "bytes; lower -e\n", rank, options.max_bytes);
    plx_comm_abort(comm);
    return 1;
  }
  if (plx_result_t r = plx_comm_destroy(comm); r != PLX_SUCCESS) {
    fmt::print(stderr, "plexus-bench: rank {}: plx_comm_destroy failed: {}: {}\n", rank,
               plx_get_error_string(r), plx_get_last_error(nullptr));
    return 1;
  }
  if (outcome.total_wrong > 0) {
    if (rank == 0) fmt::print(stderr, "plexus-bench: {} wrong elements\n", outcome.total_wrong);
    return 1;
  }
  return outcome.report_written ? 0 : 1;
}
