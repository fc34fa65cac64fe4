// blas_threads.h - how many BLAS threads each rank runs: the host's physical cores shared by the
// ranks on it (at least one each; topology::threads_per_rank, the rule plexus-run applies too),
// unless OPENBLAS_NUM_THREADS says otherwise.
#pragma once

namespace plexus::engine {

// Sets OpenBLAS's threads for a rank with `local_size` ranks on its host (nothing when
// OPENBLAS_NUM_THREADS is set) and returns the threads OpenBLAS will use.
int choose_blas_threads(int local_size);

// How much slower a rank computes when all `local_size` ranks of its host compute at once than
// when it runs alone with the same threads: the ranks' threads over the host's cores, at least
// 1 (the cores are time-shared beyond that).
double core_sharing_factor(int local_size, int threads);

}  // namespace plexus::engine
