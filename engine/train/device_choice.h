// device_choice.h - which compute device a plexus-train rank uses (--device, --autocast) and
// which GPU: the rank's local rank modulo the GPUs its process sees, so the ranks of a host
// spread over its GPUs and several ranks share one when there are more ranks than GPUs (a
// one-GPU machine runs any placement). The choice is made once, before any model buffer.
#pragma once

#include <string>

#include "engine/device/compute.h"

namespace plexus::engine {

// local_rank modulo visible_devices; 0 when no device is visible (select_compute_device then
// reports why).
int gpu_ordinal(int local_rank, int visible_devices);

// Selects device and autocast for a rank with this local rank (select_compute_device, with
// gpu_ordinal over cuda_device_count() on cuda). Returns "" on success, otherwise
// select_compute_device's message (the CPU stays selected).
std::string select_rank_device(ComputeDevice device, Autocast autocast, int local_rank);

// The line rank 0 prints once the device is selected: "device cpu (OpenBLAS, Haswell kernels,
// 2 threads), autocast none" (OpenBLAS's kernels, the CPU layers' threads: cpu_threads.h; with
// a hint to OPENBLAS_CORETYPE=SkylakeX when the processor has AVX-512 and the kernels do not
// use it) or "device cuda (GPU = local rank modulo 2 visible GPUs; rank 0 on GPU 0), autocast
// bf16".
std::string describe_compute_device(int local_rank);

// How the memory report's "device" pool is held: "host memory (--device cpu)" or "managed
// memory on GPU 0 (--device cuda)".
std::string device_pool_description(int local_rank);

}  // namespace plexus::engine
