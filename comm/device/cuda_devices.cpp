// cuda_devices.cpp - cuda_compiled(), cuda_device_count() and current_device_pci_bus_id() in a
// CUDA build.
#include "comm/device/cuda_devices.h"

#include <cuda_runtime.h>

#include "comm/device/cuda_driver.h"

namespace plexus::comm::device {

namespace {
struct Probe {
  int count = 0;
  std::string why;
};

Probe probe_devices() {
  Probe probe;
  const cudaError_t err = cudaGetDeviceCount(&probe.count);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    probe.count = 0;
    probe.why = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(err) + ": " +
                cudaGetErrorString(err);
  } else if (probe.count == 0) {
    probe.why = "cudaGetDeviceCount: 0 devices visible (check CUDA_VISIBLE_DEVICES)";
  }
  return probe;
}
}  // namespace

bool cuda_compiled() { return true; }

int cuda_device_count(std::string* why) {
  static const Probe probe = probe_devices();  // thread-safe static initialisation
  if (probe.count == 0 && why != nullptr) *why = probe.why;
  return probe.count;
}

// Whether the primary context of runtime device `device` is active (driver API, looked up in the
// loaded driver: cuDeviceGet, cuDevicePrimaryCtxGetState). False when it cannot tell.
bool primary_context_active(int device) {
  using DeviceGet = int (*)(int*, int);
  using PrimaryCtxGetState = int (*)(int, unsigned*, int*);
  auto* get = reinterpret_cast<DeviceGet>(cuda_driver_symbol("cuDeviceGet"));
  auto* state = reinterpret_cast<PrimaryCtxGetState>(
      cuda_driver_symbol("cuDevicePrimaryCtxGetState"));
  int handle = 0;
  unsigned flags = 0;
  int active = 0;
  return get != nullptr && state != nullptr && get(&handle, device) == 0 &&
         state(handle, &flags, &active) == 0 && active != 0;
}

std::string current_device_pci_bus_id() {
  const int count = cuda_device_count(nullptr);
  if (count == 0) return "";
  int device = 0;
  char bus_id[32] = {};
  if (cudaGetDevice(&device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  if (count > 1 && !primary_context_active(device)) return "";  // not chosen: device 0 for all
  if (cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return bus_id;
}

}  // namespace plexus::comm::device
