#include "topology/nic_speed.h"

#include <cstdlib>
#include <fstream>

namespace plexus::topology {

namespace {
std::optional<std::string> first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return std::nullopt;
  return line;
}
}  // namespace

std::optional<uint64_t> nic_speed_mbit_per_s(const Nic& nic, const std::string& sysfs_root) {
  if (nic.name.empty() || nic.name.find('/') != std::string::npos) return std::nullopt;
  if (nic.kind == NicKind::Network) {
    auto line = first_line(sysfs_root + "/class/net/" + nic.name + "/speed");
    if (!line) return std::nullopt;
    char* end = nullptr;
    long long mbit = std::strtoll(line->c_str(), &end, 10);
    if (end == line->c_str() || mbit <= 0 || static_cast<uint64_t>(mbit) > kMaxNicMbitPerS)
      return std::nullopt;
    return static_cast<uint64_t>(mbit);
  }
  auto line = first_line(sysfs_root + "/class/infiniband/" + nic.name + "/ports/1/rate");
  if (!line) return std::nullopt;
  char* end = nullptr;
  double gbit = std::strtod(line->c_str(), &end);  // "100 Gb/sec (4X EDR)"
  if (end == line->c_str() || !(gbit > 0) || !(gbit * 1000.0 < kMaxNicMbitPerS) ||
      line->find("Gb/sec") == std::string::npos)
    return std::nullopt;
  return static_cast<uint64_t>(gbit * 1000.0 + 0.5);
}

}  // namespace plexus::topology
