// shared_allocations.cpp - see shared_allocations.h.
#include "comm/core/shared_allocations.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "comm/base/error.h"

namespace plexus::comm {
namespace {

struct Allocation {
  size_t bytes = 0;  // mapped, page multiple
  int fd = -1;
  uint64_t id = 0;
};

struct AllocationTable {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> by_base;  // ordered: the allocation holding p is found by
                                            // upper_bound
  uint64_t next_id = 1;
};

AllocationTable& table() {
  static auto* t = new AllocationTable;  // deliberately leaked: usable during exit
  return *t;
}

size_t page_round(size_t bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

plx_result_t shared_alloc(const char* fn, size_t bytes, void** out) {
  if (!out) return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("{}: ptr is NULL", fn));
  if (bytes == 0) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("{}: bytes is 0", fn));
  }
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const auto host_bytes = static_cast<size_t>(::sysconf(_SC_PHYS_PAGES)) * page;
  if (bytes > host_bytes) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: bytes {} is more than this host's memory ({} bytes)", fn,
                                 bytes, host_bytes));
  }
  AllocationTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const uint64_t id = t.next_id++;
  const size_t mapped = page_round(bytes);
  const std::string name = shared_allocation_name(::getpid(), id);
  const int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    return set_error(PLX_ERROR_SYSTEM,
                     fmt::format("{}: memfd_create for {} bytes: {}", fn, bytes,
                                 std::strerror(errno)));
  }
  // The pages are allocated now (zeroed), as cudaMalloc does: a size the host cannot back fails
  // here with an error instead of a SIGBUS later, and the first collective on the memory does
  // not fault its pages in one by one.
  if (const int err = ::posix_fallocate(fd, 0, static_cast<off_t>(mapped)); err != 0) {
    ::close(fd);
    return set_error(PLX_ERROR_SYSTEM, fmt::format("{}: allocating {} bytes: {}", fn, mapped,
                                                   std::strerror(err)));
  }
  void* base = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    ::close(fd);
    return set_error(PLX_ERROR_SYSTEM, fmt::format("{}: mmap of {} bytes: {}", fn, mapped,
                                                   std::strerror(err)));
  }
  t.by_base[reinterpret_cast<uintptr_t>(base)] = {mapped, fd, id};
  *out = base;
  return PLX_SUCCESS;
}

plx_result_t shared_free(const char* fn, void* ptr) {
  if (!ptr) return PLX_SUCCESS;
  AllocationTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  const auto it = t.by_base.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == t.by_base.end()) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: ptr {} was not returned by plx_mem_alloc (or was freed)",
                                 fn, ptr));
  }
  ::munmap(ptr, it->second.bytes);
  ::close(it->second.fd);
  t.by_base.erase(it);
  return PLX_SUCCESS;
}

bool shared_allocation_of(const void* ptr, size_t bytes, SharedBufferRef* ref) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  AllocationTable& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  auto it = t.by_base.upper_bound(p);
  if (it == t.by_base.begin()) return false;
  --it;
  const uintptr_t offset = p - it->first;
  if (offset >= it->second.bytes || bytes > it->second.bytes - offset) return false;
  *ref = {it->second.id, it->second.fd, it->second.bytes, offset};
  return true;
}

void* Registrations::add(void* buff, size_t bytes, uint64_t alloc_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  ranges_.push_back(
      std::make_unique<Range>(Range{static_cast<unsigned char*>(buff), bytes, alloc_id}));
  return ranges_.back().get();
}

bool Registrations::remove(void* handle) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = std::find_if(ranges_.begin(), ranges_.end(),
                               [&](const auto& r) { return r.get() == handle; });
  if (it == ranges_.end()) return false;
  ranges_.erase(it);
  return true;
}

size_t Registrations::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return ranges_.size();
}

SharedBufferRef Registrations::buffer_ref(const void* ptr, size_t bytes) const {
  const auto* p = static_cast<const unsigned char*>(ptr);
  SharedBufferRef ref;
  if (!shared_allocation_of(ptr, bytes, &ref)) return {};
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& r : ranges_) {
    if (r->alloc_id == ref.alloc_id && p >= r->begin &&
        static_cast<size_t>(p - r->begin) <= r->bytes &&
        bytes <= r->bytes - static_cast<size_t>(p - r->begin)) {
      return ref;
    }
  }
  return {};
}

}  // namespace plexus::comm
