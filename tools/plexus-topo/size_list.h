// size_list.h - the message sizes plexus-topo predicts for: --sizes, or a geometric default.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::topo_tool {

// first, first * factor, ... while <= last (first >= 1, factor >= 2).
std::vector<uint64_t> geometric_sizes(uint64_t first, uint64_t last, uint64_t factor);

// "1K,64K,1M,1G" or "4096": comma-separated byte counts, each a decimal number with an optional
// K, M or G suffix (powers of 1024), from 1 to 1 TiB. False with *error naming the item
// ("--sizes: \"12Q\" is not a byte count in 1..1T (suffixes K, M, G, T)") otherwise.
bool parse_size_list(std::string_view text, std::vector<uint64_t>* out, std::string* error);

}  // namespace plexus::topo_tool
