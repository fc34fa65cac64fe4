// shared_allocations.h - host memory the ranks of a host can map (plx_mem_alloc), and a
// communicator's registrations of it (plx_comm_register), after NCCL's ncclMemAlloc and
// ncclCommRegister.
//
// Each allocation is its own memfd ("plexus-mem-<pid>-<id>", shared_buffer.h), mapped
// MAP_SHARED and rounded up to whole pages; the process keeps the descriptor open until
// plx_mem_free so that peers on the host can open it through /proc. Nothing is left in
// /dev/shm or anywhere else when the process ends, however it ends.
//
// A registration is a byte range inside one allocation that a communicator may read and write
// directly from its peers' processes. At a call, buffer_ref() turns a buffer into a
// SharedBufferRef when the whole buffer lies in one registered range of a live allocation; the
// registered shm algorithms (comm/algorithms/shm_registered.h) use it only when every rank's
// needed buffers resolve.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "comm/transport/peer_memory/shared_buffer.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// plx_mem_alloc / plx_mem_free: errors set with messages starting with `fn`.
plx_result_t shared_alloc(const char* fn, size_t bytes, void** out);
plx_result_t shared_free(const char* fn, void* ptr);

// The reference of [ptr, ptr + bytes) when it lies inside one live allocation; false if not.
bool shared_allocation_of(const void* ptr, size_t bytes, SharedBufferRef* ref);

// A communicator's registered ranges. Thread-safe: the user's thread registers while the
// communicator's executor looks buffers up.
class Registrations {
 public:
  // Registers [buff, buff + bytes) of allocation `alloc_id` (which the caller checked holds
  // it) and returns its handle. It applies to that allocation only: once freed, a new
  // allocation at the same address is not registered.
  void* add(void* buff, size_t bytes, uint64_t alloc_id);
  // Removes `handle`; false when it is not one of this communicator's.
  bool remove(void* handle);
  // The reference of [ptr, ptr + bytes) when it lies in one registered range and in a live
  // allocation; alloc_id 0 if not.
  SharedBufferRef buffer_ref(const void* ptr, size_t bytes) const;
  size_t size() const;

 private:
  struct Range {
    const unsigned char* begin;
    size_t bytes;
    uint64_t alloc_id;
  };
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Range>> ranges_;  // a handle is its Range's address
};

}  // namespace plexus::comm
