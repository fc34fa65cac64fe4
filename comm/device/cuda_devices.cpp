// cuda_devices.cpp - cuda_compiled(), cuda_device_count() and current_device_pci_bus_id() in a
// CUDA build.
#include "comm/device/cuda_devices.h"

#include <cuda_runtime.h>

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

std::string current_device_pci_bus_id() {
  if (cuda_device_count(nullptr) == 0) return "";
  int device = 0;
  char bus_id[32] = {};
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetPCIBusId(bus_id, sizeof bus_id, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return "";
  }
  return bus_id;
}

}  // namespace plexus::comm::device
