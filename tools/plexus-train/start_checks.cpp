#include "tools/plexus-train/start_checks.h"

#include <cctype>
#include <filesystem>
#include <system_error>

#include "topology/output_path.h"
#include "topology/writable_folder.h"

namespace plexus::train {

std::string check_memory_report_folder(const std::string& pattern) {
  if (pattern.empty()) return "";
  const std::string folder = topology::folder_of(pattern);
  if (folder.find("{rank}") != std::string::npos) return "";
  const std::string why = topology::writable_folder_problem(folder);
  if (why.empty()) return "";
  std::error_code ec;
  const bool missing = !std::filesystem::exists(folder, ec) && !ec;
  return "--memory-report '" + pattern + "': " + why + (missing ? " (create it first)" : "");
}

std::string check_plot_name(const std::string& path) {
  std::string suffix = path.size() >= 4 ? path.substr(path.size() - 4) : "";
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (suffix == ".png") return "";
  return "--plot '" + path + "': the name must end in .png (the plot is a PNG image)";
}

}  // namespace plexus::train
