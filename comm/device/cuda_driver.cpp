// cuda_driver.cpp - see cuda_driver.h. The two driver constants and the signature below are
// those of cuda.h (CUDA driver API, stable since CUDA 4), written out so that no CUDA header is
// needed.
#include "comm/device/cuda_driver.h"

#include <dlfcn.h>
#include <link.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace plexus::comm::device {

namespace {

constexpr int kAttributeMemoryType = 2;  // CU_POINTER_ATTRIBUTE_MEMORY_TYPE
constexpr int kAttributeIsManaged = 8;   // CU_POINTER_ATTRIBUTE_IS_MANAGED
constexpr unsigned kMemoryTypeDevice = 2;  // CU_MEMORYTYPE_DEVICE
using PointerGetAttribute = int (*)(void* data, int attribute, unsigned long long ptr);

std::atomic<bool> g_loaded{false};
std::atomic<void*> g_handle{nullptr};
std::atomic<PointerGetAttribute> g_get_attribute{nullptr};

// Whether libcuda.so.1 is among the loaded objects. A walk of the
// loaded objects' names (dl_iterate_phdr), not dlopen(RTLD_NOLOAD): while the driver is absent,
// dlopen would search the library path and map and unmap ld.so.cache on every call, some
// hundreds of microseconds that every host collective paid. The walk itself (every object's
// name compared, under the loader's lock) cost a few hundred nanoseconds of a 3 us collective,
// so it is skipped while the loader's count of objects ever added (dlpi_adds) is the one the
// last fruitless walk saw: the driver cannot have come since.
std::atomic<unsigned long long> g_adds_walked{0};  // dlpi_adds at the last walk; 0: none yet

unsigned long long objects_added() {
  unsigned long long adds = 0;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* data) -> int {
        if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
          *static_cast<unsigned long long*>(data) = info->dlpi_adds;
        }
        return 1;  // the count is the same in every entry: the first will do
      },
      &adds);
  return adds;
}

bool driver_among_loaded_objects() {
  const unsigned long long adds = objects_added();
  if (adds != 0 && adds == g_adds_walked.load(std::memory_order_relaxed)) return false;
  bool found = false;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        const char* name = info->dlpi_name;
        if (name == nullptr) return 0;
        const char* slash = std::strrchr(name, '/');
        if (std::strcmp(slash ? slash + 1 : name, "libcuda.so.1") != 0) return 0;
        *static_cast<bool*>(data) = true;
        return 1;
      },
      &found);
  if (!found) g_adds_walked.store(adds, std::memory_order_relaxed);
  return found;
}

// Only once driver_among_loaded_objects() found it: then dlopen finds it among the loaded objects.
void* driver_handle() { return dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD); }

}  // namespace

bool cuda_driver_loaded() {
  if (g_loaded.load(std::memory_order_acquire)) return true;
  if (!driver_among_loaded_objects()) return false;
  void* handle = driver_handle();
  if (handle == nullptr) return false;
  auto* fn = reinterpret_cast<PointerGetAttribute>(dlsym(handle, "cuPointerGetAttribute"));
  g_get_attribute.store(fn, std::memory_order_release);
  g_handle.store(handle, std::memory_order_release);
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

void* cuda_driver_symbol(const char* name) {
  if (!cuda_driver_loaded()) return nullptr;
  void* handle = g_handle.load(std::memory_order_acquire);
  return handle == nullptr ? nullptr : dlsym(handle, name);
}

}  // namespace plexus::comm::device
