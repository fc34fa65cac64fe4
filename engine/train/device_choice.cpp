// device_choice.cpp - a rank's compute device and GPU (see device_choice.h).
#include "engine/train/device_choice.h"

#include <cblas.h>
#include <fmt/core.h>

#include <cctype>
#include <string>

#include "engine/device/cpu_threads.h"
#include "engine/device/device.h"

namespace plexus::engine {

namespace {

// OpenBLAS runs kernels without AVX-512 (OPENBLAS_CORETYPE=Haswell, say, or a processor
// OpenBLAS 0.3.21 does not know) on a processor that has it.
bool avx512_kernels_unused() {
#if defined(__x86_64__)
  const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                   __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
  std::string core = openblas_get_corename();
  for (char& c : core) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  const bool uses = core == "skylakex" || core == "cooperlake" || core == "sapphirerapids";
  return has && !uses;
#else
  return false;
#endif
}

int visible_gpus() {
  std::string why;
  return cuda_device_count(&why);
}

}  // namespace

int gpu_ordinal(int local_rank, int visible_devices) {
  if (visible_devices <= 0 || local_rank < 0) return 0;
  return local_rank % visible_devices;
}

std::string select_rank_device(ComputeDevice device, Autocast autocast, int local_rank) {
  const int ordinal =
      device == ComputeDevice::kCuda ? gpu_ordinal(local_rank, visible_gpus()) : 0;
  return select_compute_device(device, ordinal, autocast);
}

std::string describe_compute_device(int local_rank) {
  if (!on_cuda()) {
    const int threads = cpu_threads();
    return fmt::format("device cpu (OpenBLAS, {} kernels, {} thread{}), autocast {}{}",
                       openblas_get_corename(), threads, threads == 1 ? "" : "s",
                       autocast_name(compute_autocast()),
                       avx512_kernels_unused() ? "; this processor has AVX-512: "
                                                 "OPENBLAS_CORETYPE=SkylakeX may be faster "
                                                 "(docs/tuning.md)"
                                               : "");
  }
  const int count = visible_gpus();
  return fmt::format("device cuda (GPU = local rank modulo {} visible GPU{}; rank 0 on GPU {}), "
                     "autocast {}",
                     count, count == 1 ? "" : "s", gpu_ordinal(local_rank, count),
                     autocast_name(compute_autocast()));
}

std::string device_pool_description(int local_rank) {
  if (!on_cuda()) return "host memory (--device cpu)";
  return fmt::format("managed memory on GPU {} (--device cuda)",
                     gpu_ordinal(local_rank, visible_gpus()));
}

}  // namespace plexus::engine
