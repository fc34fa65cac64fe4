#include "comm/transport/ofi/shm_names.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <filesystem>
#include <random>

#include <fmt/format.h>

namespace plexus::comm::ofi {

namespace {
constexpr const char* kPrefix = "plexus_";
}

std::string unique_shm_region_name() {
  static std::atomic<unsigned> counter{0};
  static const uint64_t salt = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return fmt::format("{}{}_{:016x}_{}", kPrefix, getpid(), salt, counter.fetch_add(1));
}

int remove_stale_shm_regions() {
  namespace fs = std::filesystem;
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) != 0) continue;
    const size_t pid_end = name.find('_', std::string(kPrefix).size());
    if (pid_end == std::string::npos) continue;
    const std::string pid_text = name.substr(std::string(kPrefix).size(),
                                             pid_end - std::string(kPrefix).size());
    if (pid_text.empty() || pid_text.find_first_not_of("0123456789") != std::string::npos) continue;
    struct stat info {};
    if (::stat(entry.path().c_str(), &info) != 0 || info.st_uid != ::getuid()) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(pid_text));
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    if (::unlink(entry.path().c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace plexus::comm::ofi
