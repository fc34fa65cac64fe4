// blas_threads.cpp - see blas_threads.h.
#include "engine/config/blas_threads.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>

#include "engine/device/cpu_threads.h"
#include "topology/host.h"

namespace plexus::engine {

int choose_blas_threads(int local_size) {
  // Decided once per process: OpenBLAS's count (OPENBLAS_NUM_THREADS as it read it) is lost once
  // it is set to 1 below, and the planner and the model both ask.
  static const int threads = std::getenv("OPENBLAS_NUM_THREADS") == nullptr
                                 ? topology::threads_per_rank(local_size)
                                 : std::max(1, openblas_get_num_threads());
  // the layers split their work over the engine's threads, each calling one-threaded BLAS
  set_cpu_threads(threads);
  openblas_set_num_threads(1);
  return threads;
}

void use_one_compute_thread() {
  set_cpu_threads(1);
  openblas_set_num_threads(1);
}

double core_sharing_factor(int local_size, int threads) {
  const double cores = std::max(1, topology::physical_core_count());
  return std::max(1.0, std::max(1, local_size) * static_cast<double>(std::max(1, threads)) / cores);
}

}  // namespace plexus::engine
