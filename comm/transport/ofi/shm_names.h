// shm_names.h - names of the shared-memory regions behind shm endpoints.
//
// libfabric's shm provider backs each endpoint with a POSIX shared-memory region
// (/dev/shm/<name>). Left to itself it names the region after the process id, so a region left
// behind by a killed process makes a later process that reuses the pid fail fi_enable with
// EBUSY. Plexus names every region itself, unique per endpoint, and removes its own regions
// whose process is gone.
#pragma once

#include <string>

namespace plexus::comm::ofi {

// "plexus_<pid>_<64 random bits in hex>_<counter>": unique on this host.
std::string unique_shm_region_name();

// Unlinks /dev/shm/plexus_<pid>_* regions owned by this user whose process no longer exists.
// Returns how many were removed. Bounded by the number of entries in /dev/shm.
int remove_stale_shm_regions();

}  // namespace plexus::comm::ofi
