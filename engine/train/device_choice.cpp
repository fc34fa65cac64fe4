// device_choice.cpp - a rank's compute device and GPU (see device_choice.h).
#include "engine/train/device_choice.h"

#include <fmt/core.h>

#include "engine/device/device.h"

namespace plexus::engine {

namespace {

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
  if (!on_cuda()) return "device cpu (OpenBLAS), autocast none";
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
