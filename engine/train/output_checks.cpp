#include "engine/train/output_checks.h"

#include <filesystem>
#include <system_error>

#include "engine/train/memory_report.h"
#include "topology/output_path.h"

namespace plexus::engine {

namespace {

// A checkpoint file as save_checkpoint writes it: through a symbolic link, where it points.
std::string checkpoint_problem(const std::string& option, const std::string& requested) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string path = requested;
  if (fs::symlink_status(requested, ec).type() == fs::file_type::symlink) {
    path = fs::weakly_canonical(requested, ec).string();
    if (ec) return option + " '" + requested + "': " + ec.message();
  }
  if (std::string why = topology::output_file_problem(path, true); !why.empty()) {
    return option + ": " + why;
  }
  return "";
}

}  // namespace

std::string check_output_paths(const std::string& memory_report_pattern,
                               const std::string& checkpoint_path,
                               const std::string& save_params_path,
                               const std::string& plot_path, int rank) {
  if (!memory_report_pattern.empty()) {
    const std::string path = memory_report_path(memory_report_pattern, rank);
    if (std::string why = topology::output_file_problem(path); !why.empty()) {
      return "--memory-report '" + memory_report_pattern + "' (rank " + std::to_string(rank) +
             "): " + why;
    }
  }
  if (rank != 0) return "";
  if (!checkpoint_path.empty()) {
    if (std::string why = checkpoint_problem("--checkpoint", checkpoint_path); !why.empty()) {
      return why;
    }
  }
  if (!save_params_path.empty()) {
    if (std::string why = checkpoint_problem("--save-params", save_params_path); !why.empty()) {
      return why;
    }
  }
  if (!plot_path.empty()) {
    // output_file_problem names the path: "'PATH': <reason>".
    if (std::string why = topology::output_file_problem(plot_path); !why.empty()) {
      return "--plot " + why;
    }
  }
  return "";
}

}  // namespace plexus::engine
