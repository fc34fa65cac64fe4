// blas_threads.cpp - see blas_threads.h.
#include "engine/config/blas_threads.h"

#include <cblas.h>

#include <algorithm>
#include <cstdlib>

#include "topology/host.h"

namespace plexus::engine {

int choose_blas_threads(int local_size) {
  if (std::getenv("OPENBLAS_NUM_THREADS") == nullptr) {
    openblas_set_num_threads(topology::threads_per_rank(local_size));
  }
  return std::max(1, openblas_get_num_threads());
}

double core_sharing_factor(int local_size, int threads) {
  const double cores = std::max(1, topology::physical_core_count());
  return std::max(1.0, std::max(1, local_size) * static_cast<double>(std::max(1, threads)) / cores);
}

}  // namespace plexus::engine
