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

std::string check_plot_path(const std::string& path, bool writer) {
  const std::string where = "--plot '" + path + "': ";
  std::string suffix = path.size() >= 4 ? path.substr(path.size() - 4) : "";
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (suffix != ".png") return where + "the name must end in .png (the plot is a PNG image)";
  if (!writer) return "";
  std::string why = topology::output_file_problem(path);
  if (why.empty()) return "";
  // output_file_problem names the path itself, as "'PATH': folder ...": once is enough.
  const std::string named = "'" + path + "': ";
  if (why.rfind(named, 0) == 0) why.erase(0, named.size());
  return where + why;
}

}  // namespace plexus::train
