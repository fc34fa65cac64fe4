// output_checks.h - plexus-train's output files checked before training starts, so a path that
// cannot be written is refused at once (exit 2) rather than after the training.
#pragma once

#include <string>

namespace plexus::engine {

// "" if this rank can write its outputs at the end; otherwise a message naming the option, the
// path and the reason:
//   --memory-report: `memory_report_pattern` with "{rank}" replaced by `rank` (every rank writes
//     its own): it must not exist as anything but a regular file (a symbolic link, device, FIFO
//     or folder is refused), and its folder must exist and be writable;
//   --checkpoint, --save-params (written by rank 0 only, so checked on rank 0): through a
//     symbolic link, its target; it must not be anything but a regular file, and the nearest
//     existing folder above it must be a writable folder (missing folders are created);
//   --plot (drawn by rank 0): it must not exist as anything but a regular file, and its folder
//     must exist and be writable.
// Run once the communicator exists, so that a refusal on rank 0 ends every rank at once.
// Empty paths are not written and not checked.
std::string check_output_paths(const std::string& memory_report_pattern,
                               const std::string& checkpoint_path,
                               const std::string& save_params_path,
                               const std::string& plot_path, int rank);

}  // namespace plexus::engine
