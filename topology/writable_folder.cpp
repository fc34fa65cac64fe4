// writable_folder.cpp - see writable_folder.h.
#include "topology/writable_folder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace plexus::topology {

std::string writable_folder_problem(const std::string& folder) {
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0) {
    return "folder '" + folder + "' cannot be used: " + std::strerror(errno);
  }
  if (!S_ISDIR(st.st_mode)) return "folder '" + folder + "' is not a folder";
  std::string probe = folder + "/.plexus-write-check-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) return "folder '" + folder + "' is not writable: " + std::strerror(errno);
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

}  // namespace plexus::topology
