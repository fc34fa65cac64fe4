// blas_threads.h - how many compute threads each rank runs: the host's physical cores shared by the
// ranks on it (at least one each; topology::threads_per_rank, the rule plexus-run applies too),
// unless OPENBLAS_NUM_THREADS says otherwise.
#pragma once

namespace plexus::engine {

// Chooses the compute threads of a rank with `local_size` ranks on its host (the value of
// OPENBLAS_NUM_THREADS when set), gives them to the CPU layers (set_cpu_threads,
// engine/device/cpu_threads.h), sets OpenBLAS itself to one thread (each layer's parts call it
// from the engine's threads) and returns the count. The count is chosen on the first call;
// later calls (the planner's, then the model's) give the same. OPENBLAS_NUM_THREADS counts as
// OpenBLAS reads it: at most the host's CPUs, and a value that is not a positive number is
// ignored.
int choose_blas_threads(int local_size);

// For work of a few rows per call (--sample and --predict: one token at a time, no batch): the
// CPU layers and OpenBLAS run on the calling thread only. Waking other threads for every layer
// cost more than it saved: 3000 sampled bytes of the default model took 16.6 s with 2 threads
// and 8.5 s with one on a loaded 2-core host (22 s with OpenBLAS's own threads).
void use_one_compute_thread();

// How much slower a rank computes when all `local_size` ranks of its host compute at once than
// when it runs alone with the same threads: the ranks' threads over the host's cores, at least
// 1 (the cores are time-shared beyond that).
double core_sharing_factor(int local_size, int threads);

}  // namespace plexus::engine
