#include "topology/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "topology/writable_folder.h"

namespace plexus::topology {

namespace {

const char* kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link (give the file it points to)";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}


}  // namespace

std::string folder_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string replace_target_problem(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return "";
    if (errno == ENOTDIR) return "'" + path + "': a part of its folder is not a folder";
    return "'" + path + "' cannot be examined: " + std::strerror(errno);
  }
  if (S_ISREG(st.st_mode)) return "";
  return "'" + path + "' exists and is " + kind_of(st.st_mode) + "; refusing to replace it";
}

std::string output_file_problem(const std::string& path, bool folders_created) {
  if (path.empty()) return "the path is empty";
  if (path.back() == '/') return "'" + path + "' names a folder, not a file";
  if (std::string why = replace_target_problem(path); !why.empty()) return why;
  std::string folder = folder_of(path);
  if (folders_created) {
    // The nearest existing ancestor must be a writable folder; the rest is created.
    struct stat st {};
    while (::stat(folder.c_str(), &st) != 0 && errno == ENOENT && folder != "." && folder != "/") {
      folder = folder_of(folder);
    }
  }
  if (std::string why = writable_folder_problem(folder); !why.empty()) return "'" + path + "': " + why;
  return "";
}

}  // namespace plexus::topology
