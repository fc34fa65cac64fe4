// eager_limit_test.cpp - the eager limit of a libfabric provider (comm/transport/ofi/
// eager_limit.h): ofi_rxm's from FI_OFI_RXM_BUFFER_SIZE, read as libfabric reads it, and
// anything it cannot mirror left unknown.
#include "comm/transport/ofi/eager_limit.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>

namespace plexus::comm::ofi {
namespace {

constexpr size_t kDefault = 16384 - kRxmHeaderBoundBytes;

TEST(EagerLimit, RxmDefaultLessItsHeader) {
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", nullptr), kDefault);
  EXPECT_EQ(eager_limit_bytes("verbs;ofi_rxm", nullptr), kDefault);
}

TEST(EagerLimit, OtherProvidersHaveNone) {
  for (const char* provider : {"shm", "efa", "udp;ofi_rxd", "tcp", ""}) {
    EXPECT_EQ(eager_limit_bytes(provider, "65536"), 0u) << provider;
    EXPECT_EQ(eager_limit_bytes(provider, nullptr), 0u) << provider;
  }
}

TEST(EagerLimit, RxmReadsItsBufferSizeAsLibfabricDoes) {
  // strtol(value, NULL, 0): decimal, hex, octal, leading blanks, trailing junk ignored.
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "65536"), 65536 - kRxmHeaderBoundBytes);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "0x8000"), 32768 - kRxmHeaderBoundBytes);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "020000"), 8192 - kRxmHeaderBoundBytes);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", " 32768"), 32768 - kRxmHeaderBoundBytes);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "4096 "), 4096 - kRxmHeaderBoundBytes);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "1024"), 1024 - kRxmHeaderBoundBytes);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "1073741824"),
            (size_t{1} << 30) - kRxmHeaderBoundBytes);
}

TEST(EagerLimit, ValuesItCannotMirrorLeaveTheLimitUnknown) {
  // Below 1 KiB (libfabric refuses a buffer smaller than its headers, or reads "16K" as 16),
  // above 1 GiB, negative, empty, no digits, overflow.
  for (const char* bad : {"", "abc", "16K", "-1", "0", "1023", "1073741825",
                          "99999999999999999999999", "-99999999999999999999999", "0x"}) {
    EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", bad), 0u) << "'" << bad << "'";
  }
}

TEST(EagerLimit, TheProcessValueIsReadOnce) {
  const size_t first = process_eager_limit_bytes("tcp;ofi_rxm");
  const char* saved = getenv("FI_OFI_RXM_BUFFER_SIZE");
  const std::string old = saved ? saved : "";
  setenv("FI_OFI_RXM_BUFFER_SIZE", first == 65536 - kRxmHeaderBoundBytes ? "32768" : "65536", 1);
  EXPECT_EQ(process_eager_limit_bytes("tcp;ofi_rxm"), first);
  if (saved) {
    setenv("FI_OFI_RXM_BUFFER_SIZE", old.c_str(), 1);
  } else {
    unsetenv("FI_OFI_RXM_BUFFER_SIZE");
  }
  EXPECT_EQ(process_eager_limit_bytes("shm"), 0u);
}

}  // namespace
}  // namespace plexus::comm::ofi
