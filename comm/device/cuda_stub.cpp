// cuda_stub.cpp - comm/device without CUDA: no devices, every pointer is host memory, and the
// device kernels return PLX_ERROR_UNSUPPORTED saying the build has no CUDA.
#include <string>

#include "comm/base/error.h"
#include "comm/device/cuda_devices.h"
#include "comm/device/device_reduce.h"
#include "comm/device/memory_kind.h"

namespace plexus::comm::device {

namespace {
constexpr const char* kNoCuda =
    "this libplexus was built without CUDA (configure with -DPLEXUS_CUDA=ON and a CUDA toolkit)";

plx_result_t unsupported(const char* function) {
  return set_error(PLX_ERROR_UNSUPPORTED, std::string(function) + ": " + kNoCuda);
}
}  // namespace

bool cuda_compiled() { return false; }

int cuda_device_count(std::string* why) {
  if (why != nullptr) *why = kNoCuda;
  return 0;
}

std::string current_device_pci_bus_id() { return ""; }

MemoryInfo classify_pointer(const void*) {
  MemoryInfo info;
  info.reason = kNoCuda;
  return info;
}

plx_result_t reduce_copy(void*, const void*, const void*, size_t, plx_datatype_t, plx_red_op_t,
                         void*) {
  return unsupported("device::reduce_copy");
}

plx_result_t reduce_sources(void*, const void* const*, int, size_t, plx_datatype_t, plx_red_op_t,
                            void*) {
  return unsupported("device::reduce_sources");
}

plx_result_t divide_by(void*, size_t, plx_datatype_t, size_t, void*) {
  return unsupported("device::divide_by");
}

plx_result_t scale_by(void*, const void*, size_t, plx_datatype_t, const void*, void*) {
  return unsupported("device::scale_by");
}

}  // namespace plexus::comm::device
