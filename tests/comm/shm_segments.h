// shm_segments.h - what the peer-memory tests check of the segments (/dev/shm names
// plexus_<pid>_pm_*): whether one is mapped in this process, and, through a PidBoard of the
// world's ranks, that none is left after the world ends.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

namespace plexus::test {

// True when a peer-memory segment is mapped in this process (its unlinked name stays in the map).
inline bool segment_mapped() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("/plexus_") != std::string::npos && line.find("_pm_") != std::string::npos) {
      return true;
    }
  }
  return false;
}

// The pids of a world's ranks, written by each rank into memory shared with the test process.
class PidBoard {
 public:
  explicit PidBoard(int n) : n_(n) {
    void* p = mmap(nullptr, sizeof(pid_t) * n, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    pids_ = p == MAP_FAILED ? nullptr : static_cast<pid_t*>(p);
    for (int r = 0; pids_ && r < n; ++r) pids_[r] = 0;
  }
  ~PidBoard() {
    if (pids_) munmap(pids_, sizeof(pid_t) * n_);
  }
  PidBoard(const PidBoard&) = delete;
  PidBoard& operator=(const PidBoard&) = delete;

  // Called by rank `rank` in its own process.
  void record(int rank) {
    if (pids_) pids_[rank] = getpid();
  }
  // /dev/shm names a rank of the world made that are still there.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> left;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
      const std::string name = entry.path().filename().string();
      for (int r = 0; pids_ && r < n_; ++r) {
        if (pids_[r] != 0 && name.rfind("plexus_" + std::to_string(pids_[r]) + "_pm_", 0) == 0) {
          left.push_back(name);
        }
      }
    }
    return left;
  }

 private:
  int n_;
  pid_t* pids_;
};

}  // namespace plexus::test
