// memory_report.cpp - each rank's memory figures as a JSON file (see memory_report.h).
#include "engine/train/memory_report.h"

#include <cstdio>
#include <fstream>
#include <stdexcept>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "engine/device/compute.h"
#include "topology/output_path.h"

namespace plexus::engine {

namespace {
constexpr const char* kRankField = "{rank}";
}  // namespace

std::string memory_report_path(const std::string& pattern, int rank) {
  std::string path = pattern;
  const std::string field = kRankField, value = std::to_string(rank);
  for (size_t at = path.find(field); at != std::string::npos; at = path.find(field, at)) {
    path.replace(at, field.size(), value);
    at += value.size();
  }
  return path;
}

std::string check_memory_report_pattern(const std::string& pattern, int world_size) {
  if (pattern.empty() || world_size <= 1 || pattern.find(kRankField) != std::string::npos) {
    return "";
  }
  return fmt::format("--memory-report '{}' has no {} in it, so the {} ranks would write one "
                     "file; put {} where each rank's number goes (e.g. 'memory.{}.json')",
                     pattern, kRankField, world_size, kRankField, kRankField);
}

namespace {

void write_report_file(const std::string& path, int rank, const nlohmann::json& report) {
  if (std::string why = topology::replace_target_problem(path); !why.empty()) {
    throw std::runtime_error(fmt::format("rank {}: cannot write the memory report: {}", rank, why));
  }
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary);
    out << report.dump(2) << "\n";
    if (!out.flush()) {
      throw std::runtime_error(fmt::format("rank {}: cannot write the memory report '{}'", rank,
                                           temporary));
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw std::runtime_error(fmt::format("rank {}: cannot rename '{}' to the memory report '{}'",
                                         rank, temporary, path));
  }
}

}  // namespace

void write_memory_report(const std::string& path, int rank, const std::string& placement,
                         const MemoryTracker& tracker) {
  // "compute_device": where the "device" pool is (GPU managed memory on cuda, host memory
  // standing for a GPU on cpu).
  write_report_file(path, rank,
                    {{"rank", rank},
                     {"placement", placement},
                     {"compute_device", compute_device_name(compute_device())},
                     {"memory", tracker.report()}});
}

void write_predicted_memory_report(const std::string& path, int rank, const std::string& placement,
                                   const nlohmann::json& prediction) {
  nlohmann::json memory = prediction;
  const int stage = memory.at("stage");
  memory.erase("stage");
  write_report_file(path, rank,
                    {{"rank", rank},
                     {"placement", placement},
                     {"compute_device", compute_device_name(compute_device())},
                     {"predicted", true},
                     {"stage", stage},
                     {"memory", memory}});
}

}  // namespace plexus::engine
