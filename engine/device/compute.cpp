// compute.cpp - the process-wide choice of compute device (compute.h).
#include "engine/device/compute.h"

#include <atomic>

#include "engine/device/cpu_bf16_gemm.h"
#include "engine/device/cuda_layers.h"
#include "engine/device/device.h"

namespace plexus::engine {
namespace {

std::atomic<ComputeDevice> g_device{ComputeDevice::kCpu};
std::atomic<Autocast> g_autocast{Autocast::kNone};

}  // namespace

bool parse_compute_device(std::string_view text, ComputeDevice* out) {
  if (text == "cpu") return *out = ComputeDevice::kCpu, true;
  if (text == "cuda") return *out = ComputeDevice::kCuda, true;
  return false;
}

bool parse_autocast(std::string_view text, Autocast* out) {
  if (text == "none") return *out = Autocast::kNone, true;
  if (text == "bf16") return *out = Autocast::kBf16, true;
  return false;
}

const char* compute_device_name(ComputeDevice device) {
  return device == ComputeDevice::kCuda ? "cuda" : "cpu";
}

const char* autocast_name(Autocast autocast) {
  return autocast == Autocast::kBf16 ? "bf16" : "none";
}

std::string select_compute_device(ComputeDevice device, int ordinal, Autocast autocast) {
  if (device == ComputeDevice::kCpu) {
    if (autocast == Autocast::kBf16 && !cpu_bf16_gemm_supported()) {
      return "--autocast bf16 on --device cpu needs a processor with AVX512-BF16 (this one has "
             "none); use --autocast none or --device cuda";
    }
    g_device = ComputeDevice::kCpu;
    g_autocast = autocast;
    return "";
  }
  if (!cuda_compiled()) {
    return "--device cuda: this build has no CUDA (configure with the CUDA toolkit installed)";
  }
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) return "--device cuda: no CUDA device: " + why;
  if (ordinal < 0 || ordinal >= count) {
    return "--device cuda: ordinal " + std::to_string(ordinal) + " of " + std::to_string(count) +
           " devices";
  }
  const std::string error = cuda::use_device(ordinal, autocast == Autocast::kBf16);
  if (!error.empty()) return "--device cuda: " + error;
  g_device = ComputeDevice::kCuda;
  g_autocast = autocast;
  return "";
}

ComputeDevice compute_device() { return g_device.load(std::memory_order_relaxed); }
Autocast compute_autocast() { return g_autocast.load(std::memory_order_relaxed); }

}  // namespace plexus::engine
