// memory_report.h - the memory figures plexus-train gives at the end of a run: rank 0 prints
// its peaks (MemoryTracker::summary()), and with --memory-report PATH every rank writes
//   {"rank": r, "placement": "D4+zero2", "compute_device": "cpu", "memory": MemoryTracker::report()}
// ("compute_device" says where the "device" pool lives: "cuda" a GPU's managed memory, "cpu"
// host memory accounted apart from the "host" pool)
// to PATH with every "{rank}" replaced by r (docs/memory.md lists the categories). With
// --estimate-memory, no run: every rank writes its stage's prediction there instead,
//   {"rank": r, "placement": ..., "compute_device": ..., "predicted": true, "stage": p,
//    "memory": prediction_json()}   (engine/plan/memory_model.h: "peak" and "peak_total" only)
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "engine/memory/memory_tracker.h"

namespace plexus::engine {

// pattern with every "{rank}" replaced by rank.
std::string memory_report_path(const std::string& pattern, int rank);

// "" if pattern can name every rank's file: it has "{rank}", or the world has one rank;
// otherwise the message for the user.
std::string check_memory_report_pattern(const std::string& pattern, int world_size);

// Writes the report (atomically: a temporary file renamed into place). Throws
// std::runtime_error naming the path if it cannot be written.
void write_memory_report(const std::string& path, int rank, const std::string& placement,
                         const MemoryTracker& tracker);
// The same for a prediction: prediction_json(stage) of the rank's pipeline stage.
void write_predicted_memory_report(const std::string& path, int rank, const std::string& placement,
                                   const nlohmann::json& prediction);

}  // namespace plexus::engine
