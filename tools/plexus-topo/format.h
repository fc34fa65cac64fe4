// format.h - how plexus-topo writes sizes, speeds and rank lists.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::topo_tool {

// 1024-based with the largest unit that keeps the value >= 1, one decimal unless whole:
// "48 KiB", "23.5 GiB", "2 TiB".
std::string format_bytes(uint64_t bytes);

// 10^6 bit/s as "100 Gbit/s" (whole Gbit/s) or "2500 Mbit/s".
std::string format_mbit(uint64_t mbit_per_s);

// Ranks as ranges and strides: "0-7", "0 8 16 ... 1016 (every 8)", "0 1 3".
std::string format_ranks(const std::vector<int>& ranks);

// Seconds as "12.1 us", "3.52 ms", "1.20 s" (three significant digits).
std::string format_seconds(double seconds);

// "slices of <chunk>", and where the flat algorithms slice smaller across hosts (cost_model.h
// flat_slice_bytes) "slices of <chunk> (<flat> for the flat algorithms across hosts: 1 ms on the
// network, ...)".
std::string format_slices(uint64_t chunk_bytes, uint64_t flat_slice_bytes);

// Bytes per second as GB/s (10^9), two decimals: "12.34".
std::string format_gbs(double bytes_per_second);
// busbw in GB/s of `bytes` moved in `seconds` times `factor`, or "-" when the time is 0 (a cost
// model of zeros predicts no time, and no rate follows from it).
std::string format_busbw(double bytes, double seconds, double factor);

// `text` with control characters (below 0x20, and 0x7f) and backslashes escaped as \n, \t,
// \\ or \xNN, and the C1 controls and the Unicode characters that reorder, break or hide text
// (bidi controls such as U+202E, line separators, zero-width, invisible and tag characters;
// format.cpp lists them) as \uNNNN or \UNNNNNNNN, so that a name read from a file cannot
// break, rewrite or disguise the printout.
std::string printable(std::string_view text);

// The PCI base class in words ("bridge", "network", "3D controller"), "" if not in the table.
std::string pci_class_name(uint16_t class_id);

}  // namespace plexus::topo_tool
