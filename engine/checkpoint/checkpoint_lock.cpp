#include "engine/checkpoint/checkpoint_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "engine/checkpoint/checkpoint.h"
#include "topology/host.h"
#include "topology/json_depth.h"

namespace plexus::engine {

namespace {

constexpr size_t kMaxLockFileBytes = 4096;  // more is not ours: read no further

std::string os_error(const std::string& path, const char* what) {
  return fmt::format("checkpoint folder lock '{}': {}: {}", path, what, std::strerror(errno));
}

// A string field of the holder's JSON, made printable (the file is anyone's to edit).
std::string printable(const nlohmann::json& holder, const char* field) {
  if (!holder.contains(field)) return "?";
  const nlohmann::json& v = holder.at(field);
  std::string text = v.is_string() ? v.get<std::string>() : v.dump();
  if (text.size() > 200) text = text.substr(0, 200) + "...";
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) == 0x7f) c = '?';
  }
  return text;
}

// "job J (pid P on host H, N ranks, since T)" from the lock file's bytes; "" if empty.
std::string describe_holder(const std::string& bytes) {
  if (bytes.empty()) return "";
  const nlohmann::json holder =
      topology::json_nesting_depth(bytes) > topology::kMaxJsonDepth
          ? nlohmann::json(nlohmann::json::value_t::discarded)
          : nlohmann::json::parse(bytes, nullptr, false);
  if (holder.is_discarded() || !holder.is_object()) {
    return fmt::format("an unknown holder (the lock file holds {} bytes that are not a holder's "
                       "JSON)",
                       bytes.size());
  }
  return fmt::format("job {} (pid {} on host {}, {} ranks, since {})", printable(holder, "job"),
                     printable(holder, "pid"), printable(holder, "host"),
                     printable(holder, "world_size"), printable(holder, "since"));
}

std::string read_some(int fd) {
  std::string bytes(kMaxLockFileBytes, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::pread(fd, bytes.data() + got, bytes.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

std::string utc_now() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm {};
  gmtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

}  // namespace

std::string job_id(uint64_t number) { return fmt::format("{:016x}", number); }

uint64_t random_job_number() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

std::string checkpoint_lock_path(const std::string& dir) { return dir + "/plexus.lock"; }

CheckpointFolderLock::CheckpointFolderLock(const std::string& dir, const std::string& job,
                                           int world_size)
    : path_(checkpoint_lock_path(dir)) {
  for (int attempt = 0;; ++attempt) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) throw CheckpointError(os_error(path_, "open"));
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      const int error = errno;
      const std::string holder = describe_holder(read_some(fd));
      ::close(fd);
      if (error != EWOULDBLOCK) {
        errno = error;
        throw CheckpointError(os_error(path_, "flock") +
                              " (the folder's file system must support locks)");
      }
      throw CheckpointError(fmt::format(
          "checkpoint folder '{}' is in use by {}: two jobs must not share a --checkpoint-dir "
          "(each would resume from and save over the other's checkpoints); wait for that job "
          "to end or give this one another folder",
          dir, holder.empty() ? "another job (its lock file names no holder yet)" : holder));
    }
    // Still the file at the path? A holder releasing just now removed it after our open.
    struct stat locked {}, at_path {};
    if (::fstat(fd, &locked) != 0) {
      const std::string message = os_error(path_, "fstat");
      ::close(fd);
      throw CheckpointError(message);
    }
    if (::stat(path_.c_str(), &at_path) != 0 || at_path.st_ino != locked.st_ino ||
        at_path.st_dev != locked.st_dev) {
      ::close(fd);
      if (attempt < 100) continue;
      throw CheckpointError(fmt::format("checkpoint folder lock '{}' keeps being replaced while "
                                        "this job takes it",
                                        path_));
    }
    fd_ = fd;
    break;
  }
  previous_ = describe_holder(read_some(fd_));
  const nlohmann::json holder = {{"job", job},
                                 {"host", topology::host_id()},
                                 {"pid", static_cast<int64_t>(::getpid())},
                                 {"world_size", world_size},
                                 {"since", utc_now()}};
  const std::string text = holder.dump() + "\n";
  if (::ftruncate(fd_, 0) != 0 ||
      ::pwrite(fd_, text.data(), text.size(), 0) != static_cast<ssize_t>(text.size())) {
    const std::string message = os_error(path_, "write");
    ::close(fd_);
    throw CheckpointError(message);
  }
}

CheckpointFolderLock::~CheckpointFolderLock() {
  struct stat locked {}, at_path {};
  if (::fstat(fd_, &locked) == 0 && ::stat(path_.c_str(), &at_path) == 0 &&
      at_path.st_ino == locked.st_ino && at_path.st_dev == locked.st_dev) {
    ::unlink(path_.c_str());
  }
  ::close(fd_);
}

}  // namespace plexus::engine
