// cpu_list.h - Linux cpulist strings ("0-23,48-71"), as /sys/devices/system/node/node0/cpulist
// and hwloc_bitmap_list_snprintf write them.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace plexus::topology {

// Number of CPUs `text` lists: comma-separated decimal numbers or ranges "a-b" (a <= b), in
// increasing order without overlaps. "" lists none. nullopt if `text` is not such a list.
std::optional<uint32_t> cpu_list_size(std::string_view text);

// The same list as inclusive ranges [first, last], in order; nullopt if it is not such a list.
std::optional<std::vector<std::pair<uint32_t, uint32_t>>> cpu_list_ranges(std::string_view text);

}  // namespace plexus::topology
