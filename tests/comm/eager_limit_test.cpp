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
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "1048576"), (size_t{1} << 20) - kRxmHeaderBoundBytes);
}

TEST(EagerLimit, RxmsEagerLimitCapsItWhenSmaller) {
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", nullptr, "1024"), 1024u);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "65536", "0x2000"), 8192u);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", "8192", "65536"), 8192 - kRxmHeaderBoundBytes);
  // One it cannot mirror leaves the limit unknown, as the buffer size's do.
  for (const char* bad : {"", "abc", "-1", "1023", "2097152", "99999999999999999999999"}) {
    EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm", nullptr, bad), 0u) << "'" << bad << "'";
  }
  EXPECT_EQ(eager_limit_bytes("shm", nullptr, "1024"), 0u);
}

// Values that stall or break rxm's set-up are refused, naming the variable; the rest (what
// libfabric 1.17 replaces by its default with a warning) are not.
TEST(EagerLimit, BufferSizesRxmCannotUseAreAProblem) {
  for (const char* fine : {"16384", "0x8000", "1048576", "", "abc", "0", "1", "08", "16K"}) {
    EXPECT_EQ(rxm_buffer_size_problem("tcp;ofi_rxm", fine), "") << "'" << fine << "'";
  }
  EXPECT_EQ(rxm_buffer_size_problem("tcp;ofi_rxm", nullptr), "");
  EXPECT_EQ(rxm_buffer_size_problem("shm", "16777216"), "");
  EXPECT_EQ(rxm_buffer_size_problem("tcp;ofi_rxm", "16777216"),
            "FI_OFI_RXM_BUFFER_SIZE='16777216' is too large; ofi_rxm allocates its receive pools "
            "in buffers of that size (past 1048576 bytes a communicator's setup stalls or fails "
            "with ENOMEM): unset it or give at most 1048576");
  for (const char* bad : {"1048577", "0x100001", "99999999999999999999999"}) {
    EXPECT_NE(rxm_buffer_size_problem("verbs;ofi_rxm", bad).find("is too large"),
              std::string::npos)
        << bad;
  }
  for (const char* bad : {"-16384", " -1", "-99999999999999999999999"}) {
    EXPECT_NE(rxm_buffer_size_problem("tcp;ofi_rxm", bad).find("is negative"), std::string::npos)
        << bad;
  }
}

TEST(EagerLimit, ValuesItCannotMirrorLeaveTheLimitUnknown) {
  // Below 1 KiB (libfabric takes its default for a buffer smaller than its headers, or reads
  // "16K" as 16), above 1 MiB (refused: rxm_buffer_size_problem), negative, empty, no digits,
  // overflow.
  for (const char* bad : {"", "abc", "16K", "-1", "0", "1023", "1048577", "1073741824",
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
