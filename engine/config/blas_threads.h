// blas_threads.h - how many compute threads each rank runs: the host's physical cores shared by the
// ranks on it (at least one each; topology::threads_per_rank, the rule plexus-run applies too),
// unless OPENBLAS_NUM_THREADS says otherwise.
#pragma once

namespace plexus::engine {

// Chooses the compute threads of a rank with `local_size` ranks on its host (the value of
// OPENBLAS_NUM_THREADS when set), gives them to the CPU layers (set_cpu_threads,
// engine/device/cpu_threads.h), sets OpenBLAS itself to one thread (each layer's parts call it
// from the engine's threads) and returns the count.
int choose_blas_threads(int local_size);

// How much slower a rank computes when all `local_size` ranks of its host compute at once than
// when it runs alone with the same threads: the ranks' threads over the host's cores, at least
// 1 (the cores are time-shared beyond that).
double core_sharing_factor(int local_size, int threads);

}  // namespace plexus::engine
