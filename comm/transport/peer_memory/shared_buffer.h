// shared_buffer.h - user buffers that the other ranks of a host can map: memory made by
// plx_mem_alloc (a memfd per allocation, comm/core/shared_allocations.h), named by a small
// reference that a rank publishes in its peer-memory slot and its peers resolve to a mapping of
// their own (the host analogue of NCCL's user-buffer registration, where peers map a rank's
// cuMem allocation through an exported handle).
//
// A peer opens the owner's memfd as /proc/<owner pid>/fd/<fd> (same user, same pid namespace:
// the segment's RankWords tell) and maps the whole allocation, MAP_SHARED. Before mapping it
// checks that the descriptor still names that allocation: a memfd's link reads
// "/memfd:plexus-mem-<pid>-<id> (deleted)", so a number the owner closed and reused for another
// file is refused, as is any file that is not the owner's allocation `id`.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace plexus::comm {

// Where a buffer lies in its owner's allocation. alloc_id 0: not in plx_mem_alloc memory.
struct SharedBufferRef {
  uint64_t alloc_id = 0;     // the owner's allocation number (from 1, per process)
  int32_t fd = -1;           // the owner's memfd
  uint64_t alloc_bytes = 0;  // size of the whole allocation (mapped as one), page multiple
  uint64_t offset = 0;       // the buffer's start in the allocation, bytes
};

// The memfd name of allocation `id` of process `pid` (without the "/memfd:" prefix).
std::string shared_allocation_name(pid_t pid, uint64_t id);

// The peers' allocations mapped into this process, kept per (peer, allocation) for later calls
// and unmapped by the destructor. Used by one thread at a time (the communicator's executor).
class PeerAllocations {
 public:
  PeerAllocations() = default;
  PeerAllocations(const PeerAllocations&) = delete;
  PeerAllocations& operator=(const PeerAllocations&) = delete;
  ~PeerAllocations();

  // The start of buffer `ref` of process `pid` (peer member `peer`) in this process, mapping
  // its allocation on first use; nullptr with *why (naming the failing step and errno) when it
  // cannot be mapped. The pointer stays valid until the next make_room().
  unsigned char* resolve(int peer, pid_t pid, const SharedBufferRef& ref, std::string* why);
  // Before a call's resolve()s that may map `count` new allocations: unmaps the allocations
  // their owners have freed (the owner's descriptor no longer names them), then, when `count`
  // more would pass kMaxMappings or the mappings pass kMaxMappedBytes, every mapping but the
  // verified() ones. So peers keep a freed allocation's pages alive only until their next call
  // on new buffers.
  void make_room(size_t count);

  // The allocations (per member: send id, send bytes, recv id, recv bytes) that every member
  // mapped at the last call that checked: while a call's buffers lie in the same allocations,
  // every member's resolve() hits its cache and cannot fail, so that check may be skipped. The
  // eviction in make_room() keeps these mappings. Set alike on every member (from what they all
  // read in the segment); empty: none.
  const std::vector<uint64_t>& verified() const { return verified_; }
  void set_verified(std::vector<uint64_t> key) { verified_ = std::move(key); }
  static constexpr size_t kMaxMappings = 64;
  static constexpr size_t kMaxMappedBytes = size_t{8} << 30;

 private:
  struct Mapping {
    int peer = -1;
    pid_t pid = 0;
    uint64_t id = 0;
    int32_t fd = -1;
    void* base = nullptr;
    size_t bytes = 0;
  };
  bool is_verified(const Mapping& m) const;
  std::vector<Mapping> mappings_;
  std::vector<uint64_t> verified_;
};

}  // namespace plexus::comm
