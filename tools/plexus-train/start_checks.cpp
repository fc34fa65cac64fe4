#include "tools/plexus-train/start_checks.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "topology/output_path.h"

namespace plexus::train {

std::string check_memory_report_folder(const std::string& pattern) {
  if (pattern.empty()) return "";
  const size_t slash = pattern.rfind('/');
  const std::string folder =
      slash == std::string::npos ? "." : slash == 0 ? "/" : pattern.substr(0, slash);
  if (folder.find("{rank}") != std::string::npos) return "";
  const std::string where = "--memory-report '" + pattern + "': folder '" + folder + "' ";
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    return where + "cannot be used: " + std::strerror(errno) + " (create it first)";
  }
  if (!S_ISDIR(st.st_mode)) return where + "is not a folder";
  std::string probe = folder + "/.plexus-write-check-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return where + "is not writable: " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string check_plot_name(const std::string& path) {
  std::string suffix = path.size() >= 4 ? path.substr(path.size() - 4) : "";
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (suffix == ".png") return "";
  return "--plot '" + path + "': the name must end in .png (the plot is a PNG image)";
}

}  // namespace plexus::train
