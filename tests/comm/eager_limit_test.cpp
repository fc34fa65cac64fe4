// eager_limit_test.cpp - the eager limit of a libfabric provider (comm/transport/ofi/
// eager_limit.h): ofi_rxm's from FI_OFI_RXM_BUFFER_SIZE, checked as hostile input.
#include "comm/transport/ofi/eager_limit.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <optional>
#include <string>

namespace plexus::comm::ofi {
namespace {

// Sets FI_OFI_RXM_BUFFER_SIZE (unset for nullopt) for one test, then puts it back.
class RxmBufferSize {
 public:
  explicit RxmBufferSize(const char* value) {
    if (const char* old = getenv(kName)) saved_ = old;
    if (value) {
      setenv(kName, value, 1);
    } else {
      unsetenv(kName);
    }
  }
  ~RxmBufferSize() {
    if (saved_) {
      setenv(kName, saved_->c_str(), 1);
    } else {
      unsetenv(kName);
    }
  }

 private:
  static constexpr const char* kName = "FI_OFI_RXM_BUFFER_SIZE";
  std::optional<std::string> saved_;
};

TEST(EagerLimit, RxmDefaultLessItsHeader) {
  const RxmBufferSize unset(nullptr);
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm"), 16384 - kRxmHeaderBoundBytes);
  EXPECT_EQ(eager_limit_bytes("verbs;ofi_rxm"), 16384 - kRxmHeaderBoundBytes);
}

TEST(EagerLimit, OtherProvidersHaveNone) {
  const RxmBufferSize set("65536");
  EXPECT_EQ(eager_limit_bytes("shm"), 0u);
  EXPECT_EQ(eager_limit_bytes("efa"), 0u);
  EXPECT_EQ(eager_limit_bytes("udp;ofi_rxd"), 0u);
  EXPECT_EQ(eager_limit_bytes(""), 0u);
}

TEST(EagerLimit, RxmFollowsItsBufferSize) {
  const RxmBufferSize set("65536");
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm"), 65536 - kRxmHeaderBoundBytes);
  const RxmBufferSize smallest("1024");
  EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm"), 1024 - kRxmHeaderBoundBytes);
}

TEST(EagerLimit, MalformedOrOutOfRangeValuesLeaveTheDefault) {
  for (const char* bad : {"", "abc", "16K", "-1", " 4096", "4096 ", "1023", "0", "1073741825",
                          "99999999999999999999999", "0x4000"}) {
    const RxmBufferSize set(bad);
    EXPECT_EQ(eager_limit_bytes("tcp;ofi_rxm"), 16384 - kRxmHeaderBoundBytes) << "'" << bad << "'";
  }
}

}  // namespace
}  // namespace plexus::comm::ofi
