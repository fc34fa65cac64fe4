// pci_bus_id.h - one spelling for PCI bus ids, so that hwloc's, NVML's and a file's agree.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace plexus::topology {

// "domain:bus:device.function" in hex, any case, with a domain of up to 8 digits (NVML writes
// "00000000:10:1C.0"), returned as hwloc writes it: "0000:10:1c.0" (the domain takes 4 digits,
// more only if it needs them). nullopt if `text` is not a bus id (bus and device take 1-2
// digits, function 1 digit in 0..7).
std::optional<std::string> normalize_pci_bus_id(std::string_view text);

// The same, from numbers.
std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function);

}  // namespace plexus::topology
