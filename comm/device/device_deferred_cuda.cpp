// device_deferred_cuda.cpp - run_deferred() of device_deferred.h in a CUDA build: the CUDA copy
// engine (cudaMallocHost, cudaMemcpyAsync on the call's stream) and the wait before the copies.
//
// The completion step may run on another thread than the call (plx_wait from any thread), whose
// current device may differ: every CUDA call here makes the call's device current first and
// restores the thread's own afterwards.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "comm/device/device_deferred.h"
#include "comm/device/device_paths.h"

namespace plexus::comm::device {

namespace {

// Makes `device` current on this thread while it lives (when it is not already).
class CurrentDevice {
 public:
  explicit CurrentDevice(int device) {
    if (cudaGetDevice(&previous_) == cudaSuccess && previous_ != device &&
        cudaSetDevice(device) == cudaSuccess) {
      switched_ = true;
    }
    (void)cudaGetLastError();  // a failure shows in the CUDA call that follows
  }
  ~CurrentDevice() {
    if (switched_) (void)cudaSetDevice(previous_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  int previous_ = -1;
  bool switched_ = false;
};

class CudaCopyEngine final : public CopyEngine {
 public:
  // `stream`: the grouped call's stream, or NULL (the legacy default stream) for the
  // non-blocking forms.
  CudaCopyEngine(const char* fn, int rank, int device, cudaStream_t stream)
      : fn_(fn), rank_(rank), device_(device), stream_(stream) {}

  plx_result_t allocate(size_t bytes, void** pinned, const std::string& what) override {
    const CurrentDevice current(device_);
    void* made = nullptr;
    PLX_CHECK(cuda_result(cudaMallocHost(&made, bytes), fn_, rank_, what));
    *pinned = made;
    return PLX_SUCCESS;
  }

  void release(void* pinned) noexcept override {
    const CurrentDevice current(device_);
    if (cudaFreeHost(pinned) != cudaSuccess) {
      (void)cudaGetLastError();
      log_message(LogLevel::Warn, "{}: rank {}: cudaFreeHost of a call's pinned staging failed",
                  fn_, rank_);
    }
  }

  plx_result_t to_pinned(void* pinned, const void* buffer, size_t bytes,
                         const std::string& what) override {
    const CurrentDevice current(device_);
    return cuda_result(cudaMemcpyAsync(pinned, buffer, bytes, cudaMemcpyDeviceToHost, stream_),
                       fn_, rank_, what);
  }

  plx_result_t from_pinned(void* buffer, const void* pinned, size_t bytes,
                           const std::string& what) override {
    const CurrentDevice current(device_);
    return cuda_result(cudaMemcpyAsync(buffer, pinned, bytes, cudaMemcpyHostToDevice, stream_),
                       fn_, rank_, what);
  }

  plx_result_t wait(const std::string& what) override {
    const CurrentDevice current(device_);
    return cuda_result(cudaStreamSynchronize(stream_), fn_, rank_, what);
  }

 private:
  const char* fn_;
  int rank_;
  int device_;
  cudaStream_t stream_;
};

}  // namespace

plx_result_t run_deferred(const char* fn, plx_comm* comm, void* stream, int device,
                          const DeviceArgs& args, const HostRun& queue) {
  if (args.nonblocking) {
    // No stream to order on: every earlier piece of work of this process on the device.
    PLX_CHECK(cuda_result(cudaDeviceSynchronize(), fn, comm->rank,
                          "waiting for the device's earlier work (cudaDeviceSynchronize)"));
  }
  // A non-blocking call copies on the legacy default stream, even inside a group: it has no
  // stream of its own.
  cudaStream_t copies = args.nonblocking ? nullptr : static_cast<cudaStream_t>(stream);
  auto engine = std::make_shared<CudaCopyEngine>(fn, comm->rank, device, copies);
  return stage_deferred(fn, comm->rank, args, std::move(engine), queue);
}

}  // namespace plexus::comm::device
