// checkpoint_metrics.h - the --metrics-file of a run that may resume from a checkpoint: one JSON
// object per line, {"step": s, "loss": ..., ...}, written by rank 0.
//
// A fresh start truncates the file. A run resumed from a checkpoint whose next step is N (steps
// 1..N done) keeps the earlier run's lines of steps 1..N and drops those of later steps (the
// earlier run went past its last checkpoint; those steps run again and are written again), then
// appends, so the file holds every step once, in order, across any number of resumes. Lines
// that are not a JSON object with an integer "step" (a line cut by a crash) are dropped.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

namespace plexus::engine {

// Opens `path` for appending the run's lines: truncated when resumed_step is nullopt, else
// rewritten (atomically: a temporary file renamed over it) with the lines of steps <=
// *resumed_step kept. Throws std::invalid_argument "cannot write --metrics-file 'PATH': <reason>"
// if it cannot be read, rewritten or opened.
std::unique_ptr<std::ofstream> open_metrics_file(const std::string& path,
                                                 std::optional<int64_t> resumed_step);

}  // namespace plexus::engine
