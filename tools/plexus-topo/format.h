// format.h - how plexus-topo writes sizes, speeds and rank lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plexus::topo_tool {

// 1024-based with the largest unit that keeps the value >= 1, one decimal unless whole:
// "48 KiB", "23.5 GiB", "2 TiB".
std::string format_bytes(uint64_t bytes);

// 10^6 bit/s as "100 Gbit/s" (whole Gbit/s) or "2500 Mbit/s".
std::string format_mbit(uint64_t mbit_per_s);

// Ranks as ranges and strides: "0-7", "0 8 16 ... 1016 (every 8)", "0 1 3".
std::string format_ranks(const std::vector<int>& ranks);

// The PCI base class in words ("bridge", "network", "3D controller"), "" if not in the table.
std::string pci_class_name(uint16_t class_id);

}  // namespace plexus::topo_tool
