// shm_available.h - may tests run over libfabric's shm provider here?
//
// Asks the library's own shm self-test once, in a forked child, so the test process itself
// never initializes libfabric before it forks ranks. Tests over shm GTEST_SKIP when it is false.
#pragma once

#include <cstdio>
#include <string>

#include "comm/transport/ofi/provider_select.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {

inline bool shm_available() {
  static int available = -1;
  if (available < 0) {
    auto outcome = run_ranks(1, [](int) {
      std::string why;
      if (comm::ofi::shm_works(&why)) return 0;
      std::fprintf(stderr, "shm does not work here: %s\n", why.c_str());
      return 3;
    });
    available = outcome[0].exited && outcome[0].exit_code == 0 ? 1 : 0;
  }
  return available == 1;
}

}  // namespace plexus::test
