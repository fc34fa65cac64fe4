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

}  // namespace plexus::topology
