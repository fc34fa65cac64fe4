// tracked_buffer.h - a float array whose bytes are accounted in a MemoryTracker, and whose
// element ranges can be given back and taken again while the array keeps its place.
//
// The array is reserved with an anonymous mmap (MAP_NORESERVE): the operating system commits a
// page only when it is first written. release(offset, count) un-accounts those elements and
// returns every page lying wholly inside the range to the system (madvise MADV_DONTNEED);
// commit(offset, count) accounts them again and zero-fills them. So a ZeRO-3 unit's parameters
// or a ZeRO-2 unit's gradients can be dropped and later regathered at the same addresses, which
// the model's fixed offsets need. A released range's contents are unspecified (0 on returned
// pages, old values on the pages it shares with its neighbours); commit before using it again.
//
// Accounting is by elements (4 bytes each), so the tracker's figures are exact for every range;
// the resident memory differs from them by at most a page at each end of a released range.
//
// On the CUDA compute device (engine/device/compute.h selected cuda before the buffer was
// made), a MemoryPool::kDevice buffer is CUDA managed memory on the selected GPU instead
// (cuda::alloc_managed), so the layers' kernels and the host (collectives, checkpoint I/O) both
// reach it: commit zero-fills with a kernel (cuda::fill), and release only un-accounts (the
// managed allocation keeps its pages until the buffer is destroyed; nothing is returned to the
// device early). MemoryPool::kHost buffers are always host mmap memory, on either device.
//
// A new buffer is fully committed (zero-filled, accounted) unless told otherwise. Commit and
// release track each element's state: committing a committed element, or releasing a released
// one, is allowed and counted once. Thread safety: none; use from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "engine/memory/memory_tracker.h"

namespace plexus::engine {

class TrackedBuffer {
 public:
  TrackedBuffer() = default;
  // count floats in (pool, category) of tracker (nullptr: memory_tracker()). Throws
  // std::bad_alloc if the reservation fails.
  TrackedBuffer(size_t count, MemoryPool pool, MemoryCategory category, bool committed = true,
                MemoryTracker* tracker = nullptr);
  ~TrackedBuffer();
  TrackedBuffer(const TrackedBuffer&) = delete;
  TrackedBuffer& operator=(const TrackedBuffer&) = delete;
  TrackedBuffer(TrackedBuffer&& other) noexcept;
  TrackedBuffer& operator=(TrackedBuffer&& other) noexcept;

  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return count_; }
  bool empty() const { return count_ == 0; }
  float& operator[](size_t i) { return data_[i]; }
  const float& operator[](size_t i) const { return data_[i]; }
  MemoryPool pool() const { return pool_; }
  MemoryCategory category() const { return category_; }
  // Whether the elements are CUDA managed memory (a kDevice buffer made on cuda).
  bool managed() const { return managed_; }

  // Accounts [offset, offset+count) again and zero-fills it. Throws std::out_of_range naming
  // the range and the size if it does not fit.
  void commit(size_t offset, size_t count);
  // Un-accounts [offset, offset+count) and returns its whole pages. Throws std::out_of_range.
  void release(size_t offset, size_t count);
  void commit_all() { commit(0, count_); }
  void release_all() { release(0, count_); }
  // Elements now committed.
  size_t committed() const { return committed_count_; }
  bool is_committed(size_t offset, size_t count) const;
  // Sets every committed element to value (the whole buffer must be committed to use fill());
  // a managed buffer is filled by a kernel.
  void fill(float value);

 private:
  void check_range(const char* what, size_t offset, size_t count) const;
  void account(int64_t elements);
  void reset() noexcept;

  float* data_ = nullptr;
  size_t count_ = 0;
  size_t mapped_bytes_ = 0;
  bool managed_ = false;  // cuda::alloc_managed instead of mmap
  MemoryPool pool_ = MemoryPool::kDevice;
  MemoryCategory category_ = MemoryCategory::kParameters;
  MemoryTracker* tracker_ = nullptr;
  std::vector<bool> committed_;  // per element (ranges are few and large in practice)
  size_t committed_count_ = 0;
};

}  // namespace plexus::engine
