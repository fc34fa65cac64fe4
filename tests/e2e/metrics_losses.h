// metrics_losses.h - the per-step losses of a --metrics-file (plexus-train's one JSON line per
// logged step, written by rank 0), which the end-to-end tests compare across placements,
// hosts and devices.
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace plexus::test {

// The "loss" of every line of the metrics file at path, in order; empty when there is no file.
// A line that is not JSON with a "loss" throws nlohmann::json's exception (the test fails).
inline std::vector<double> metrics_losses(const std::string& path) {
  std::vector<double> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line).at("loss"));
  return out;
}

}  // namespace plexus::test
