// device_memory_kind_test.cpp - classify_pointer (comm/device/memory_kind.h) on host, pinned,
// registered, device and managed memory, and its answer on a machine without a GPU.
#include "comm/device/memory_kind.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "comm/device/cuda_devices.h"
#include "tests/comm/device_test_support.h"
#include "tests/support/gpu_available.h"

namespace plexus::test {
namespace {

using comm::device::classify_pointer;
using comm::device::MemoryInfo;
using comm::device::MemoryKind;

TEST(MemoryKind, BuildHasCuda) { EXPECT_TRUE(comm::device::cuda_compiled()); }

TEST(MemoryKind, Names) {
  EXPECT_STREQ(comm::device::memory_kind_name(MemoryKind::Host), "host");
  EXPECT_STREQ(comm::device::memory_kind_name(MemoryKind::PinnedHost), "pinned host");
  EXPECT_STREQ(comm::device::memory_kind_name(MemoryKind::Managed), "managed");
  EXPECT_STREQ(comm::device::memory_kind_name(MemoryKind::Device), "device");
}

// Host memory is Host with or without a GPU; without one, the reason says why CUDA was not asked.
TEST(MemoryKind, HostMemoryIsHost) {
  std::vector<int> heap(1 << 20);  // large enough to be mmap'ed
  int stack = 0;
  static int global = 0;
  std::string why;
  const bool gpu = gpu_available(&why);
  for (const void* p : {static_cast<const void*>(heap.data()), static_cast<const void*>(&stack),
                        static_cast<const void*>(&global), static_cast<const void*>(nullptr)}) {
    const MemoryInfo info = classify_pointer(p);
    EXPECT_EQ(info.kind, MemoryKind::Host) << p;
    EXPECT_EQ(info.device, -1) << p;
    if (!gpu) {
      EXPECT_EQ(info.reason, why) << p;
    }
  }
}

// Device memory, at its start and inside, on every visible device.
TEST(MemoryKind, CudaMallocIsDevice) {
  PLX_REQUIRE_GPU();
  int devices = 0;
  PLX_ASSERT_CUDA(cudaGetDeviceCount(&devices));
  for (int d = 0; d < devices; ++d) {
    PLX_ASSERT_CUDA(cudaSetDevice(d));
    DeviceBuffer buf(4096);
    ASSERT_TRUE(buf.ok()) << buf.error();
    for (const void* p : {static_cast<const void*>(buf.bytes()),
                          static_cast<const void*>(buf.bytes() + 4095)}) {
      const MemoryInfo info = classify_pointer(p);
      EXPECT_EQ(info.kind, MemoryKind::Device) << "device " << d << " " << info.reason;
      EXPECT_EQ(info.device, d);
      EXPECT_EQ(info.reason, "");
    }
  }
  PLX_ASSERT_CUDA(cudaSetDevice(0));
}

TEST(MemoryKind, CudaMallocHostAndHostRegisterArePinned) {
  PLX_REQUIRE_GPU();
  PLX_ASSERT_CUDA(cudaSetDevice(0));
  void* pinned = nullptr;
  PLX_ASSERT_CUDA(cudaMallocHost(&pinned, 1 << 16));
  MemoryInfo info = classify_pointer(static_cast<char*>(pinned) + 100);
  EXPECT_EQ(info.kind, MemoryKind::PinnedHost) << info.reason;
  EXPECT_EQ(info.device, 0);
  PLX_ASSERT_CUDA(cudaFreeHost(pinned));

  std::vector<char> pageable(1 << 20);
  EXPECT_EQ(classify_pointer(pageable.data()).kind, MemoryKind::Host);
  PLX_ASSERT_CUDA(cudaHostRegister(pageable.data(), pageable.size(), cudaHostRegisterDefault));
  info = classify_pointer(pageable.data() + 4096);
  EXPECT_EQ(info.kind, MemoryKind::PinnedHost) << info.reason;
  PLX_ASSERT_CUDA(cudaHostUnregister(pageable.data()));
  EXPECT_EQ(classify_pointer(pageable.data()).kind, MemoryKind::Host);
}

TEST(MemoryKind, CudaMallocManagedIsManaged) {
  PLX_REQUIRE_GPU();
  PLX_ASSERT_CUDA(cudaSetDevice(0));
  void* managed = nullptr;
  PLX_ASSERT_CUDA(cudaMallocManaged(&managed, 1 << 16));
  const MemoryInfo info = classify_pointer(managed);
  EXPECT_EQ(info.kind, MemoryKind::Managed) << info.reason;
  EXPECT_EQ(info.reason, "");
  PLX_ASSERT_CUDA(cudaFree(managed));
}

}  // namespace
}  // namespace plexus::test
