#include "engine/memory/tracked_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

#include "engine/device/compute.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

namespace {

size_t page_size() {
  static const size_t size = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return size;
}

}  // namespace

TrackedBuffer::TrackedBuffer(size_t count, MemoryPool pool, MemoryCategory category,
                             bool committed, MemoryTracker* tracker)
    : count_(count), pool_(pool), category_(category),
      tracker_(tracker != nullptr ? tracker : &memory_tracker()) {
  if (count_ > 0 && pool_ == MemoryPool::kDevice && on_cuda()) {
    try {
      data_ = static_cast<float*>(cuda::alloc_managed(count_ * sizeof(float)));
    } catch (...) {
      count_ = 0;
      throw;
    }
    managed_ = true;
  } else if (count_ > 0) {
    const size_t page = page_size();
    mapped_bytes_ = (count_ * sizeof(float) + page - 1) / page * page;
    void* p = mmap(nullptr, mapped_bytes_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
      count_ = 0;
      mapped_bytes_ = 0;
      throw std::bad_alloc();
    }
    data_ = static_cast<float*>(p);  // fresh anonymous pages read as 0
  }
  committed_.assign(count_, false);
  if (committed) commit(0, count_);
}

TrackedBuffer::~TrackedBuffer() { reset(); }

void TrackedBuffer::reset() noexcept {
  if (data_ != nullptr) {
    if (managed_) {
      cuda::free_managed(data_);
    } else {
      munmap(data_, mapped_bytes_);
    }
  }
  if (tracker_ != nullptr && committed_count_ > 0) {
    try {
      tracker_->add(pool_, category_, -static_cast<int64_t>(committed_count_ * sizeof(float)));
    } catch (...) {
    }
  }
  data_ = nullptr;
  count_ = 0;
  mapped_bytes_ = 0;
  managed_ = false;
  committed_.clear();
  committed_count_ = 0;
}

TrackedBuffer::TrackedBuffer(TrackedBuffer&& other) noexcept { *this = std::move(other); }

TrackedBuffer& TrackedBuffer::operator=(TrackedBuffer&& other) noexcept {
  if (this == &other) return *this;
  reset();
  data_ = std::exchange(other.data_, nullptr);
  count_ = std::exchange(other.count_, 0);
  mapped_bytes_ = std::exchange(other.mapped_bytes_, 0);
  managed_ = std::exchange(other.managed_, false);
  pool_ = other.pool_;
  category_ = other.category_;
  tracker_ = other.tracker_;
  committed_ = std::move(other.committed_);
  committed_count_ = std::exchange(other.committed_count_, 0);
  other.committed_.clear();
  return *this;
}

void TrackedBuffer::check_range(const char* what, size_t offset, size_t count) const {
  if (offset > count_ || count > count_ - offset) {
    throw std::out_of_range("TrackedBuffer::" + std::string(what) + ": range [" +
                            std::to_string(offset) + ", " + std::to_string(offset) + " + " +
                            std::to_string(count) + ") is outside the buffer of " +
                            std::to_string(count_) + " elements");
  }
}

void TrackedBuffer::account(int64_t elements) {
  if (elements != 0) tracker_->add(pool_, category_, elements * static_cast<int64_t>(sizeof(float)));
}

void TrackedBuffer::commit(size_t offset, size_t count) {
  check_range("commit", offset, count);
  int64_t added = 0;
  for (size_t i = offset; i < offset + count; ++i) {
    if (!committed_[i]) committed_[i] = true, ++added;
  }
  account(added);
  committed_count_ += static_cast<size_t>(added);
  if (count == 0) return;
  if (managed_) {
    cuda::fill(data_ + offset, count, 0.0f);
  } else {
    std::memset(data_ + offset, 0, count * sizeof(float));
  }
}

void TrackedBuffer::release(size_t offset, size_t count) {
  check_range("release", offset, count);
  int64_t removed = 0;
  for (size_t i = offset; i < offset + count; ++i) {
    if (committed_[i]) committed_[i] = false, ++removed;
  }
  account(-removed);
  committed_count_ -= static_cast<size_t>(removed);
  if (managed_) return;  // managed memory keeps its pages until the buffer goes
  // Give back the pages wholly inside the range.
  const size_t page = page_size();
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data_ + offset);
  const uintptr_t end = reinterpret_cast<uintptr_t>(data_ + offset + count);
  const uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

bool TrackedBuffer::is_committed(size_t offset, size_t count) const {
  check_range("is_committed", offset, count);
  for (size_t i = offset; i < offset + count; ++i) {
    if (!committed_[i]) return false;
  }
  return true;
}

void TrackedBuffer::fill(float value) {
  if (committed_count_ != count_) {
    throw std::logic_error("TrackedBuffer::fill: " + std::to_string(count_ - committed_count_) +
                           " of " + std::to_string(count_) + " elements are released");
  }
  if (count_ == 0) return;
  if (managed_) {
    cuda::fill(data_, count_, value);
  } else {
    std::fill(data_, data_ + count_, value);
  }
}

}  // namespace plexus::engine
