// peer_segment.cpp - see peer_segment.h.
#include "comm/transport/peer_memory/peer_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>
#include <random>

#include <fmt/format.h>

namespace plexus::comm {
namespace {

constexpr size_t kPage = 4096;

size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

size_t slots_offset(int ranks) {
  return round_up(sizeof(SegmentHeader) + sizeof(RankWords) * static_cast<size_t>(ranks), kPage);
}

std::string fresh_name() {
  static std::atomic<unsigned> counter{0};
  static const uint64_t salt = [] {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  }();
  return fmt::format("/plexus_{}_pm_{:016x}_{}", getpid(), salt, counter.fetch_add(1));
}

}  // namespace

size_t segment_bytes(int ranks, size_t slot_bytes) {
  return slots_offset(ranks) + 2 * static_cast<size_t>(ranks) * slot_bytes;
}

SegmentMapping::~SegmentMapping() {
  if (base_) ::munmap(base_, bytes_);
}

bool SegmentMapping::map(int fd, size_t bytes, std::string* why) {
  // MAP_POPULATE: the page tables of the whole segment are filled here, once. Without it every
  // rank took a page fault on the first store into (or load from) each 4 KiB page of a slot
  // buffer, during a collective: about 10 us a page on a virtual machine, so the first call that
  // reached a buffer's far pages took a millisecond (a 256 KiB broadcast, 1.3 ms instead of 20
  // us), and a benchmark of 20 calls per size lost 2-4x at 64-256 KiB.
  void* base = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (base == MAP_FAILED) {
    *why = fmt::format("mmap of {} bytes failed: {}", bytes, std::strerror(errno));
    return false;
  }
  base_ = base;
  bytes_ = bytes;
  // One load from every page. MAP_POPULATE filled the page tables, but on a virtual machine
  // whose host backs guest pages lazily (Firecracker, measured here) the first access to each
  // page of this mapping still cost about 6 us, with no page fault that the guest counts; a 2
  // MiB segment is touched once here (a few ms on such a host, microseconds elsewhere) instead
  // of inside the first collectives that reach its pages.
  const auto* bytes_in = static_cast<const volatile unsigned char*>(base);
  for (size_t offset = 0; offset < bytes; offset += 4096) (void)bytes_in[offset];
  return true;
}

bool SegmentMapping::create(int ranks, size_t slot_bytes, std::string* name, std::string* why) {
  *name = fresh_name();
  const size_t bytes = segment_bytes(ranks, slot_bytes);
  const int fd = ::shm_open(name->c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) {
    *why = fmt::format("shm_open({}) failed: {}", *name, std::strerror(errno));
    return false;
  }
  // posix_fallocate, not ftruncate: tmpfs must reserve every page now, so that a full /dev/shm
  // is an error here (the communicator then runs without peer memory), not a SIGBUS on the first
  // store into a page it could not supply.
  const int rc = ::posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  bool ok = rc == 0;
  if (!ok) {
    *why = fmt::format("posix_fallocate({}, {} bytes) failed: {}", *name, bytes,
                       std::strerror(rc));
  }
  ok = ok && map(fd, bytes, why);
  ::close(fd);
  if (!ok) {
    ::shm_unlink(name->c_str());
    return false;
  }
  ranks_ = ranks;
  SegmentHeader& h = *new (base_) SegmentHeader;
  h.ranks = static_cast<uint32_t>(ranks);
  h.slot_bytes = slot_bytes;
  h.total_bytes = bytes;
  for (int r = 0; r < ranks; ++r) new (&words(r)) RankWords;
  std::atomic_thread_fence(std::memory_order_release);
  h.magic = kSegmentMagic;  // peers open it only after our message, which orders this
  return true;
}

bool SegmentMapping::open(const std::string& name, int ranks, std::string* why) {
  const int fd = ::shm_open(name.c_str(), O_RDWR, 0);
  if (fd < 0) {
    *why = fmt::format("shm_open({}) failed: {}", name, std::strerror(errno));
    return false;
  }
  struct stat info {};
  bool ok = ::fstat(fd, &info) == 0 && info.st_size >= static_cast<off_t>(sizeof(SegmentHeader));
  if (!ok) *why = fmt::format("{} is empty or cannot be read", name);
  ok = ok && map(fd, static_cast<size_t>(info.st_size), why);
  ::close(fd);
  if (!ok) return false;
  const SegmentHeader& h = header();
  if (h.magic != kSegmentMagic || h.ranks != static_cast<uint32_t>(ranks) ||
      h.total_bytes != bytes_ || h.total_bytes != segment_bytes(ranks, h.slot_bytes)) {
    *why = fmt::format("{} is not a peer-memory segment for {} ranks", name, ranks);
    return false;
  }
  ranks_ = ranks;
  return true;
}

RankWords& SegmentMapping::words(int rank) const {
  auto* first = reinterpret_cast<RankWords*>(static_cast<unsigned char*>(base_) +
                                             sizeof(SegmentHeader));
  return first[rank];
}

unsigned char* SegmentMapping::slot(int rank, int buffer) const {
  return static_cast<unsigned char*>(base_) + slots_offset(ranks_) +
         (2 * static_cast<size_t>(rank) + static_cast<size_t>(buffer)) * header().slot_bytes;
}

void unlink_segment(const std::string& name) { ::shm_unlink(name.c_str()); }

}  // namespace plexus::comm
