// shared_buffer.cpp - see shared_buffer.h.
#include "comm/transport/peer_memory/shared_buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace plexus::comm {

std::string shared_allocation_name(pid_t pid, uint64_t id) {
  return fmt::format("plexus-mem-{}-{}", pid, id);
}

PeerAllocations::~PeerAllocations() {
  for (const Mapping& m : mappings_) ::munmap(m.base, m.bytes);
}

namespace {

// Whether descriptor `fd` of process `pid` is allocation `id` (the owner has not freed it, nor
// reused the number for another file); if not, *why says what the link is or why it is unreadable.
bool names_allocation(pid_t pid, int32_t fd, uint64_t id, std::string* why) {
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, fd);
  char link[256] = {};
  const ssize_t n = ::readlink(path.c_str(), link, sizeof(link) - 1);
  if (n < 0) {
    *why = fmt::format("readlink {}: {}", path, std::strerror(errno));
    return false;
  }
  if (std::string(link, static_cast<size_t>(n)) !=
      "/memfd:" + shared_allocation_name(pid, id) + " (deleted)") {
    *why = fmt::format("{} is '{}', not allocation {} of pid {}", path, link, id, pid);
    return false;
  }
  return true;
}

}  // namespace

bool PeerAllocations::is_verified(const Mapping& m) const {
  const size_t at = static_cast<size_t>(m.peer) * 4;
  for (size_t k = at; k + 1 < at + 4 && k + 1 < verified_.size(); k += 2) {
    if (verified_[k] == m.id && verified_[k + 1] == m.bytes) return true;
  }
  return false;
}

void PeerAllocations::make_room(size_t count) {
  std::vector<Mapping> kept;
  size_t bytes = 0;
  // 1. Allocations their owners freed (or whose owners exited).
  for (const Mapping& m : mappings_) {
    std::string gone;
    if (is_verified(m) || names_allocation(m.pid, m.fd, m.id, &gone)) {
      kept.push_back(m);
      bytes += m.bytes;
    } else {
      ::munmap(m.base, m.bytes);
    }
  }
  mappings_ = std::move(kept);
  if (mappings_.size() + count <= kMaxMappings && bytes <= kMaxMappedBytes) return;
  // 2. Still too many: every one but the verified.
  kept.clear();
  for (const Mapping& m : mappings_) {
    if (is_verified(m)) {
      kept.push_back(m);
    } else {
      ::munmap(m.base, m.bytes);
    }
  }
  mappings_ = std::move(kept);
}

unsigned char* PeerAllocations::resolve(int peer, pid_t pid, const SharedBufferRef& ref,
                                        std::string* why) {
  for (const Mapping& m : mappings_) {
    if (m.peer == peer && m.pid == pid && m.id == ref.alloc_id && m.bytes == ref.alloc_bytes) {
      return static_cast<unsigned char*>(m.base) + ref.offset;
    }
  }
  if (ref.alloc_id == 0 || ref.fd < 0 || ref.alloc_bytes == 0 || ref.offset >= ref.alloc_bytes ||
      pid <= 0) {
    *why = fmt::format("no usable reference (allocation {}, fd {}, {} bytes, offset {}, pid {})",
                       ref.alloc_id, ref.fd, ref.alloc_bytes, ref.offset, pid);
    return nullptr;
  }
  if (!names_allocation(pid, ref.fd, ref.alloc_id, why)) return nullptr;
  const std::string path = fmt::format("/proc/{}/fd/{}", pid, ref.fd);
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    *why = fmt::format("open {}: {}", path, std::strerror(errno));
    return nullptr;
  }
  struct stat info {};
  if (::fstat(fd, &info) != 0 || static_cast<uint64_t>(info.st_size) < ref.alloc_bytes) {
    *why = fmt::format("{}: {} bytes, the reference says {}", path,
                       static_cast<long long>(info.st_size), ref.alloc_bytes);
    ::close(fd);
    return nullptr;
  }
  // MAP_POPULATE: the page tables are filled in one pass (the owner's plx_mem_alloc allocated
  // the pages), not by one fault per page during the first call.
  void* base = ::mmap(nullptr, ref.alloc_bytes, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_POPULATE, fd, 0);
  const int err = errno;
  ::close(fd);
  if (base == MAP_FAILED) {
    *why = fmt::format("mmap of {} bytes of {}: {}", ref.alloc_bytes, path, std::strerror(err));
    return nullptr;
  }
  mappings_.push_back({peer, pid, ref.alloc_id, ref.fd, base, ref.alloc_bytes});
  return static_cast<unsigned char*>(base) + ref.offset;
}

}  // namespace plexus::comm
