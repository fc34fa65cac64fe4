// host.h - facts about the host this process runs on, from hwloc and the kernel.
#pragma once

#include <string>

namespace plexus::topology {

// Identifies the host: PLEXUS_HOST_ID if set (for emulated clusters), else
// "<hostname>/<boot id>" (boot id from /proc/sys/kernel/random/boot_id), so two containers with
// the same hostname on different machines still differ.
std::string host_id();

// Number of physical cores hwloc sees (at least 1; falls back to logical CPUs, then 1).
int physical_core_count();

// Number of processing units (hardware threads) this process may run on (at least 1).
int allowed_pu_count();

// The compute threads (BLAS, OpenMP) each of `ranks_on_host` ranks runs: the physical cores over
// the ranks, at least 1. Cores, not hardware threads: a core's second hyperthread adds no GEMM
// throughput and only contends for the same units. The one rule of plexus-run (the
// OPENBLAS_NUM_THREADS and OMP_NUM_THREADS it gives each rank) and plexus-train (the BLAS
// threads it sets when OPENBLAS_NUM_THREADS is unset).
int threads_per_rank(int ranks_on_host);

}  // namespace plexus::topology
