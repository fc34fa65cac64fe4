// device_rank.h - the rank side that the multi-process device-buffer tests share
// (device_collectives_test, device_async_test, device_staged_pipeline_test, device_hmem_test):
// a cudaMalloc'ed (or managed) buffer that frees itself, and a base for the per-test Rank class
// that records failures (rank_failure prints the first ten), checks plexus and CUDA results, and
// moves bytes to and from the device on the rank's stream; and, on the test side, the start of
// the ranks as fresh processes of this binary (a forked child of a process that initialised CUDA
// cannot use CUDA).
#pragma once

#include <cuda_runtime.h>
#include <limits.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"
#include "tests/support/subprocess.h"

namespace plexus::test {

// cudaMalloc'ed (or cudaMallocManaged) bytes, freed on destruction; ptr is NULL if the
// allocation failed.
struct DeviceBytes {
  explicit DeviceBytes(size_t bytes, bool managed = false) {
    const cudaError_t err = managed ? cudaMallocManaged(&ptr, bytes == 0 ? 1 : bytes)
                                    : cudaMalloc(&ptr, bytes == 0 ? 1 : bytes);
    if (err != cudaSuccess) ptr = nullptr;
  }
  ~DeviceBytes() {
    if (ptr) cudaFree(ptr);
  }
  DeviceBytes(const DeviceBytes&) = delete;
  DeviceBytes& operator=(const DeviceBytes&) = delete;
  unsigned char* at(size_t offset_bytes = 0) const {
    return static_cast<unsigned char*>(ptr) + offset_bytes;
  }
  int32_t* int32_at(size_t element = 0) const { return static_cast<int32_t*>(ptr) + element; }
  void* ptr = nullptr;
};

// The start of every rank: device 0 made current (every rank shares it) and a non-blocking
// stream created. "" or what failed.
inline std::string start_device_rank(cudaStream_t* stream) {
  if (cudaSetDevice(0) != cudaSuccess) return "cudaSetDevice(0)";
  if (cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking) != cudaSuccess) {
    return "cudaStreamCreateWithFlags";
  }
  return "";
}

class DeviceRank {
 public:
  DeviceRank(int rank, int n, plx_comm_t comm, cudaStream_t stream)
      : r_(rank), n_(n), comm_(comm), stream_(stream) {}

  // Records a failure (the first ten are printed) and returns false.
  bool fail(const std::string& what) {
    if (failures_++ < 10) rank_failure(r_, what);
    return false;
  }
  bool ok(plx_result_t rc, const std::string& what) {
    if (rc == PLX_SUCCESS) return true;
    return fail(what + ": " + plx_get_error_string(rc) + ": " + plx_get_last_error(nullptr));
  }
  bool cuda(cudaError_t err, const std::string& what) {
    return err == cudaSuccess || fail(what + ": " + cudaGetErrorName(err));
  }
  int failures() const { return failures_; }

  // Writes host bytes to the device on the stream, WITHOUT waiting: the call under test must.
  // (From pageable memory, CUDA has taken the bytes when cudaMemcpyAsync returns.)
  bool put(void* dst, const std::vector<unsigned char>& src) {
    return src.empty() ||
           cuda(cudaMemcpyAsync(dst, src.data(), src.size(), cudaMemcpyHostToDevice, stream_),
                "cudaMemcpyAsync to the device");
  }
  // Poisons device bytes on the stream, without waiting.
  bool poison(void* dst, size_t bytes) {
    return bytes == 0 || cuda(cudaMemsetAsync(dst, 0xee, bytes, stream_), "cudaMemsetAsync");
  }
  // Reads device bytes back on the stream (after the call's work on it) and waits.
  std::vector<unsigned char> get(const void* src, size_t bytes) {
    std::vector<unsigned char> out(bytes);
    if (bytes > 0) {
      cuda(cudaMemcpyAsync(out.data(), src, bytes, cudaMemcpyDeviceToHost, stream_),
           "cudaMemcpyAsync to the host");
    }
    cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    return out;
  }
  // An error with its code, its message starting with prefix and containing contains.
  void expect_error(plx_result_t rc, plx_result_t want, const std::string& prefix,
                    const std::string& contains) {
    const std::string message = plx_get_last_error(nullptr);
    if (rc != want || message.rfind(prefix, 0) != 0 ||
        message.find(contains) == std::string::npos) {
      fail(std::string("expected ") + plx_get_error_string(want) + " \"" + prefix +
           "...\" with \"" + contains + "\", got " + plx_get_error_string(rc) + " \"" + message +
           "\"");
    }
  }
  // The algorithm plx_comm_last_algorithm names for the last call.
  std::string last_algorithm() const {
    const char* algorithm = "";
    plx_comm_last_algorithm(comm_, &algorithm);
    return algorithm;
  }

 protected:
  int r_, n_;
  plx_comm_t comm_;
  cudaStream_t stream_;

 private:
  int failures_ = 0;
};

// Starts this binary again as the n ranks of one world rendezvousing on loopback (PLEXUS_RANK,
// PLEXUS_WORLD_SIZE, PLEXUS_LOCAL_RANK, PLEXUS_MASTER_ADDR/PORT set), each with `marker`
// ("NAME=VALUE": tells main() to run the rank side) and env added to its environment.
inline std::vector<std::unique_ptr<Subprocess>> start_self_world(int n, const std::string& marker,
                                                                 const EnvList& env) {
  char self[PATH_MAX] = {};
  const ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
  const std::string path = len > 0 ? std::string(self, static_cast<size_t>(len)) : "";
  const std::string port = std::to_string(free_tcp_port());
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> vars = {marker,
                                     "PLEXUS_RANK=" + std::to_string(r),
                                     "PLEXUS_WORLD_SIZE=" + std::to_string(n),
                                     "PLEXUS_LOCAL_RANK=" + std::to_string(r),
                                     "PLEXUS_MASTER_ADDR=127.0.0.1",
                                     "PLEXUS_MASTER_PORT=" + port};
    for (const auto& [k, v] : env) vars.push_back(k + "=" + v);
    ranks.push_back(std::make_unique<Subprocess>(std::vector<std::string>{path}, vars));
  }
  return ranks;
}

}  // namespace plexus::test
