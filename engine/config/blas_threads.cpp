// blas_threads.cpp - see blas_threads.h.
#include "engine/config/blas_threads.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>

#include "engine/device/cpu_threads.h"
#include "topology/host.h"

namespace plexus::engine {

int choose_blas_threads(int local_size) {
  const int threads = std::getenv("OPENBLAS_NUM_THREADS") == nullptr
                          ? topology::threads_per_rank(local_size)
                          : std::max(1, openblas_get_num_threads());
  // the layers split their work over the engine's threads, each calling one-threaded BLAS
  set_cpu_threads(threads);
  openblas_set_num_threads(1);
  return threads;
}

double core_sharing_factor(int local_size, int threads) {
  const double cores = std::max(1, topology::physical_core_count());
  return std::max(1.0, std::max(1, local_size) * static_cast<double>(std::max(1, threads)) / cores);
}

}  // namespace plexus::engine
