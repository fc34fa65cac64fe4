// compute_vector.h - a std::vector whose storage the selected compute device can reach
// (engine/device/compute.h): CUDA managed memory when the process runs on cuda, the ordinary
// heap on the cpu.
//
// For the buffers a layer receives that are not TrackedBuffers (Gpt's parameters, gradients,
// activations and token copies). Each allocator remembers where it allocated: the choice is
// read once, when the vector is constructed, so a vector made before select_compute_device()
// keeps heap memory and is freed as such. Host code may read and write the elements at any
// time (managed memory migrates; every cuda:: layer call synchronizes before it returns).
// Growing a managed vector copies its elements on the host, as std::vector does.
//
// Thread safety: as std::vector.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "engine/device/compute.h"
#include "engine/device/cuda_layers.h"

namespace plexus::engine {

template <typename T>
class ComputeAllocator {
 public:
  using value_type = T;
  // Moving or swapping a vector takes its allocator along, so memory is always freed by the
  // kind that allocated it.
  using propagate_on_container_copy_assignment = std::true_type;
  using propagate_on_container_move_assignment = std::true_type;
  using propagate_on_container_swap = std::true_type;

  ComputeAllocator() noexcept : managed_(on_cuda()) {}
  template <typename U>
  ComputeAllocator(const ComputeAllocator<U>& other) noexcept : managed_(other.managed()) {}

  // Throws std::bad_alloc (cuda::alloc_managed's, or the heap's).
  T* allocate(size_t n) {
    if (n > std::numeric_limits<size_t>::max() / sizeof(T)) throw std::bad_array_new_length();
    if (managed_) return static_cast<T*>(cuda::alloc_managed(n * sizeof(T)));
    return std::allocator<T>().allocate(n);
  }
  void deallocate(T* p, size_t n) noexcept {
    if (managed_) {
      cuda::free_managed(p);
    } else {
      std::allocator<T>().deallocate(p, n);
    }
  }
  // Whether this allocator hands out CUDA managed memory.
  bool managed() const { return managed_; }

  template <typename U>
  bool operator==(const ComputeAllocator<U>& other) const {
    return managed_ == other.managed();
  }

 private:
  bool managed_;
};

template <typename T>
using ComputeVector = std::vector<T, ComputeAllocator<T>>;

}  // namespace plexus::engine
