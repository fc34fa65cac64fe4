// cuda_devices.h - whether this libplexus has CUDA code, how many GPUs this process sees, and
// where the current one sits.
//
// libplexus links the CUDA runtime statically (CUDA::cudart_static, as NCCL does), so it loads and
// runs its host collectives on a machine with no NVIDIA driver; these calls then report 0 devices
// and say why. Thread-safe.
#pragma once

#include <string>

namespace plexus::comm::device {

// True if libplexus was built with CUDA (PLEXUS_CUDA=AUTO with a toolkit, or ON).
bool cuda_compiled();

// Number of CUDA devices visible to this process: 0 without CUDA in the build, without a driver,
// or without a GPU, and then *why (if non-null) says which, e.g. "cudaGetDeviceCount:
// cudaErrorInsufficientDriver: CUDA driver version is insufficient for CUDA runtime version".
// The answer is computed once per process (the device set cannot change after the driver loads).
int cuda_device_count(std::string* why);

// The PCI bus id of the GPU the calling thread has chosen, as the driver writes it
// ("0000:4F:00.0"): the only GPU the process sees, or its current device (cudaGetDevice) once that
// device's primary context is active (cudaSetDevice makes it so from CUDA 12, as does a
// framework's first allocation). "" when it has chosen none - several GPUs and an inactive
// current device, which cudaGetDevice reports as device 0 for every rank alike - and when there is
// no CUDA in the build, no driver or no GPU. Creates no CUDA context. Thread-safe.
std::string current_device_pci_bus_id();

}  // namespace plexus::comm::device
