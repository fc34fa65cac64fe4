// nic_speed.h - a NIC's link speed as the kernel reports it in sysfs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "topology/host_topology.h"

namespace plexus::topology {

// Link speed of `nic` in 10^6 bit/s, read under `sysfs_root` ("/sys"):
//   Network:           class/net/<name>/speed ("25000", in Mbit/s)
//   OpenFabrics, Efa:  class/infiniband/<name>/ports/1/rate ("100 Gb/sec (4X EDR)")
// nullopt when the file is missing, unreadable or says the speed is unknown (-1, 0).
std::optional<uint64_t> nic_speed_mbit_per_s(const Nic& nic,
                                             const std::string& sysfs_root = "/sys");

}  // namespace plexus::topology
