// gpu_available.h - the check every GPU test starts with.
//
// A GPU test's first statement is PLX_REQUIRE_GPU(): without a CUDA device (no CUDA in the build,
// no driver, no GPU, or CUDA_VISIBLE_DEVICES empty) the test is SKIPPED with the reason CUDA gave,
// e.g. "no CUDA device: cudaGetDeviceCount: cudaErrorInsufficientDriver: ...", so CI machines
// without a GPU run the rest of the suite and show why these did not run. The answer comes from
// libplexus (comm/device/cuda_devices.h), so this header needs no CUDA include.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "comm/device/cuda_devices.h"

namespace plexus::test {

// True if this process sees at least one CUDA device; otherwise *why says what is missing.
inline bool gpu_available(std::string* why) {
  return plexus::comm::device::cuda_device_count(why) > 0;
}

}  // namespace plexus::test

// Skips the current test, with the reason, when no CUDA device is visible.
#define PLX_REQUIRE_GPU()                                           \
  do {                                                              \
    std::string plx_gpu_why_;                                       \
    if (!::plexus::test::gpu_available(&plx_gpu_why_)) {            \
      GTEST_SKIP() << "no CUDA device: " << plx_gpu_why_;           \
    }                                                               \
  } while (0)
