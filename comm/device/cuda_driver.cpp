// cuda_driver.cpp - see cuda_driver.h. The two driver constants and the signature below are
// those of cuda.h (CUDA driver API, stable since CUDA 4), written out so that no CUDA header is
// needed.
#include "comm/device/cuda_driver.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdint>

namespace plexus::comm::device {

namespace {

constexpr int kAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttributeIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr unsigned kMemoryTypeDevice = 2;  // CU_MEMORYTYPE_DEVICE
using PointerGetAttribute = int (*)(void* data, int attribute, unsigned long long ptr);

std::atomic<bool> g_loaded{false};
std::atomic<PointerGetAttribute> g_get_attribute{nullptr};

void* driver_handle() { return dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); }

}  // namespace

bool cuda_driver_loaded() {
  if (g_loaded.load(std::memory_order_acquire)) return true;
  void* handle = driver_handle();
  if (handle == nullptr) return false;
  auto* fn = reinterpret_cast<PointerGetAttribute>(dlsym(handle, "cuPointerGetAttribute"));
  g_get_attribute.store(fn, std::memory_order_release);
  g_loaded.store(true, std::memory_order_release);
  // The reference taken by dlopen stays: the driver is never unloaded while we may call it.
  return true;
}

bool driver_says_device(const void* ptr) {
  if (ptr == nullptr || !cuda_driver_loaded()) return false;
  const PointerGetAttribute get = g_get_attribute.load(std::memory_order_acquire);
  if (get == nullptr) return false;
  const auto address = static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(ptr));
  unsigned memory_type = 0;
  if (get(&memory_type, kAttributeMemoryType, address) != 0) return false;  // not CUDA's
  if (memory_type != kMemoryTypeDevice) return false;
  unsigned managed = 0;
  if (get(&managed, kAttributeIsManaged, address) != 0) return false;
  return managed == 0;
}

}  // namespace plexus::comm::device
