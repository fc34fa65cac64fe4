// device_reduce_errors_test.cpp - bad arguments to the GPU reduction kernels, and a machine
// without a GPU. These need no GPU: arguments are checked before CUDA is called, and without a
// device a valid call must return an error with CUDA's reason, never crash or hang.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "comm/base/error.h"
#include "comm/device/device_reduce.h"
#include "tests/support/gpu_available.h"

namespace plexus::test {
namespace {

namespace dev = plexus::comm::device;

// A non-null pointer that no kernel will ever read: the calls below fail before launching.
void* fake(uintptr_t address) { return reinterpret_cast<void*>(address); }

void ExpectError(plx_result_t got, plx_result_t want, const std::string& fragment) {
  EXPECT_EQ(got, want) << last_error();
  EXPECT_NE(std::string(last_error()).find(fragment), std::string::npos)
      << "message \"" << last_error() << "\" lacks \"" << fragment << "\"";
}

TEST(DeviceReduceErrors, DatatypeOutOfRange) {
  ExpectError(dev::reduce_copy(fake(0x1000), fake(0x2000), fake(0x3000), 4,
                               static_cast<plx_datatype_t>(10), PLX_SUM, nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::reduce_copy: datatype 10 not in 0..9");
  ExpectError(dev::divide_by(fake(0x1000), 4, static_cast<plx_datatype_t>(-1), 2, nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::divide_by: datatype -1 not in 0..9");
}

TEST(DeviceReduceErrors, OpOutOfRange) {
  ExpectError(dev::reduce_copy(fake(0x1000), fake(0x2000), fake(0x3000), 4, PLX_FLOAT32,
                               static_cast<plx_red_op_t>(5), nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::reduce_copy: op 5 not in 0..4");
}

TEST(DeviceReduceErrors, SourceCountOutOfRange) {
  const void* sources[17] = {};
  for (int n : {0, -1, 17}) {
    ExpectError(dev::reduce_sources(fake(0x1000), sources, n, 4, PLX_INT32, PLX_SUM, nullptr),
                PLX_ERROR_INVALID_ARGUMENT,
                "device::reduce_sources: nsources " + std::to_string(n) + " not in 1..16");
  }
}

TEST(DeviceReduceErrors, NullPointers) {
  ExpectError(dev::reduce_copy(nullptr, fake(0x2000), fake(0x3000), 3, PLX_INT8, PLX_MAX, nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::reduce_copy: dst is null with count 3");
  const void* sources[2] = {fake(0x2000), nullptr};
  ExpectError(dev::reduce_sources(fake(0x1000), sources, 2, 3, PLX_INT8, PLX_MAX, nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::reduce_sources: sources[1] is null with count 3");
  ExpectError(dev::reduce_sources(fake(0x1000), nullptr, 2, 3, PLX_INT8, PLX_MAX, nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::reduce_sources: sources is null with count 3");
  ExpectError(dev::scale_by(fake(0x1000), fake(0x2000), 3, PLX_FLOAT64, nullptr, nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::scale_by: scalar is null");
}

TEST(DeviceReduceErrors, MisalignedElements) {
  ExpectError(dev::reduce_copy(fake(0x1000), fake(0x2002), fake(0x3000), 1, PLX_FLOAT32, PLX_SUM,
                               nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "is not aligned to the 4-byte elements of float32");
  const double scalar = 2.0;
  ExpectError(dev::scale_by(fake(0x1004), fake(0x2000), 1, PLX_FLOAT64, &scalar, nullptr),
              PLX_ERROR_INVALID_ARGUMENT, "device::scale_by: dst 0x1004 is not aligned");
}

TEST(DeviceReduceErrors, DivisorZero) {
  ExpectError(dev::divide_by(fake(0x1000), 4, PLX_INT64, 0, nullptr), PLX_ERROR_INVALID_ARGUMENT,
              "device::divide_by: divisor 0 not in 1..");
}

// Count 0 moves nothing and launches nothing, whatever the pointers (and with or without a GPU).
TEST(DeviceReduceErrors, CountZeroIsANoOp) {
  const int8_t scalar = 3;
  EXPECT_EQ(dev::reduce_copy(nullptr, nullptr, nullptr, 0, PLX_INT8, PLX_SUM, nullptr), PLX_SUCCESS);
  EXPECT_EQ(dev::reduce_sources(nullptr, nullptr, 16, 0, PLX_FLOAT16, PLX_MIN, nullptr),
            PLX_SUCCESS);
  EXPECT_EQ(dev::divide_by(nullptr, 0, PLX_FLOAT32, 8, nullptr), PLX_SUCCESS);
  EXPECT_EQ(dev::divide_by(nullptr, 5, PLX_FLOAT32, 1, nullptr), PLX_SUCCESS);  // x / 1 == x
  EXPECT_EQ(dev::scale_by(nullptr, nullptr, 0, PLX_INT8, &scalar, nullptr), PLX_SUCCESS);
}

// Without a GPU (this build has CUDA, the machine has no driver or device), a valid call returns
// PLX_ERROR_UNSUPPORTED with CUDA's reason, and launches nothing.
TEST(DeviceReduceErrors, NoGpuIsAnErrorNotACrash) {
  std::string why;
  if (gpu_available(&why)) GTEST_SKIP() << "a GPU is present: this checks machines without one";
  ExpectError(dev::reduce_copy(fake(0x1000), fake(0x2000), fake(0x3000), 4, PLX_FLOAT32, PLX_SUM,
                               nullptr),
              PLX_ERROR_UNSUPPORTED, "device::reduce_copy: ");
  const float scalar = 2.0f;
  ExpectError(dev::scale_by(fake(0x1000), fake(0x1000), 4, PLX_FLOAT32, &scalar, nullptr),
              PLX_ERROR_UNSUPPORTED, "device::scale_by: ");
  ExpectError(dev::divide_by(fake(0x1000), 4, PLX_INT32, 3, nullptr), PLX_ERROR_UNSUPPORTED,
              "device::divide_by: ");
  EXPECT_FALSE(why.empty());
}

}  // namespace
}  // namespace plexus::test
