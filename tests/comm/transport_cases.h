// transport_cases.h - what the multi-process tests of split, non-blocking calls, groups and
// mismatch detection share: the transports they run over (libfabric tcp and shm, and UCX), the
// environment of each, whether it works on this host, and the check of a call's exact failure.
//
// Every case runs real ranks (tests/support/multiprocess.h) over the real rendezvous. The cost
// model comes from PLEXUS_COST_MODEL (nothing is measured or cached, so no test depends on, or
// writes to, the user's cache; PLEXUS_CACHE_DIR points at a fresh temporary folder anyway).
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <functional>
#include <initializer_list>
#include <ostream>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"
#include "tests/support/temp_dir.h"

namespace plexus::test {

// One transport and one world size. transport: "tcp" or "shm" (libfabric, PLEXUS_FI_PROVIDER),
// or "ucx" (PLEXUS_TRANSPORT=ucx).
struct RankCase {
  std::string transport;
  int ranks = 1;
};

inline void PrintTo(const RankCase& c, std::ostream* out) {
  *out << c.transport << ", " << c.ranks << " ranks";
}

inline std::string rank_case_name(const ::testing::TestParamInfo<RankCase>& info) {
  return info.param.transport + "_" + std::to_string(info.param.ranks) + "ranks";
}

// Every transport with every size.
inline std::vector<RankCase> rank_cases(std::initializer_list<int> sizes) {
  std::vector<RankCase> out;
  for (const char* transport : {"tcp", "shm", "ucx"}) {
    for (int n : sizes) out.push_back({transport, n});
  }
  return out;
}

// A folder for PLEXUS_CACHE_DIR, made once per test process and removed at its exit (forked
// ranks leave with _exit, so only the test process removes it).
inline const std::string& scratch_cache_dir() {
  static const TempDir folder("plexus-test-cache");
  return folder.path();
}

// The environment of every rank of a case. timeout_ms bounds each wait, so a failing case ends.
inline EnvList transport_env(const std::string& transport, int timeout_ms = 30000) {
  EnvList env = {{"PLEXUS_TIMEOUT_MS", std::to_string(timeout_ms)},
                 {"PLEXUS_COST_MODEL", "2.5,0.1,0.05"}};
  if (!scratch_cache_dir().empty()) env.push_back({"PLEXUS_CACHE_DIR", scratch_cache_dir()});
  if (transport == "ucx") {
    env.push_back({"PLEXUS_TRANSPORT", "ucx"});
  } else {
    env.push_back({"PLEXUS_TRANSPORT", "ofi"});
    env.push_back({"PLEXUS_FI_PROVIDER", transport});
  }
  if (transport == "tcp") {
    // libfabric's rxm over tcp pre-touches 16 KiB bounce buffers for 2048-4096 receives per
    // endpoint (~1 s of memset on a loaded 2-core runner, per communicator and per split child);
    // smaller queues keep these tests fast and change no protocol (the eager limit stays).
    for (const char* name : {"FI_OFI_RXM_RX_SIZE", "FI_OFI_RXM_TX_SIZE", "FI_OFI_RXM_MSG_RX_SIZE",
                             "FI_OFI_RXM_MSG_TX_SIZE"}) {
      env.push_back({name, "256"});
    }
  }
  return env;
}

// Whether `transport` may run here: shm needs a working /dev/shm (asked once, in a forked
// child); tcp and UCX (a build requirement, over loopback TCP) always do.
inline bool transport_available(const std::string& transport) {
  return transport != "shm" || shm_available();
}

inline std::string last_error_text() { return plx_get_last_error(nullptr); }

// "" when the call returned `want` with exactly `message`, else what differs.
inline std::string expect_failure(plx_result_t got, plx_result_t want, const std::string& message) {
  if (got != want) {
    return "result " + std::string(plx_get_error_string(got)) + ", expected " +
           plx_get_error_string(want) + " (\"" + last_error_text() + "\")";
  }
  if (last_error_text() != message) {
    return "message \"" + last_error_text() + "\", expected \"" + message + "\"";
  }
  return "";
}

// "" on success, else the call's error text prefixed with `what`.
inline std::string expect_success(plx_result_t got, const std::string& what) {
  if (got == PLX_SUCCESS) return "";
  return what + ": " + plx_get_error_string(got) + " (\"" + last_error_text() + "\")";
}

// A communicator owned by a rank body: aborted on an early return (a failed check), so that the
// other ranks fail fast instead of waiting out PLEXUS_TIMEOUT_MS; destroy() ends it cleanly.
class OwnedComm {
 public:
  OwnedComm() = default;
  ~OwnedComm() {
    if (comm_) plx_comm_abort(comm_);
  }
  OwnedComm(const OwnedComm&) = delete;
  OwnedComm& operator=(const OwnedComm&) = delete;

  plx_comm_t get() const { return comm_; }
  plx_comm_t* out() { return &comm_; }
  // plx_comm_destroy; "" or the failure.
  std::string destroy(const std::string& what) {
    const plx_result_t rc = plx_comm_destroy(comm_);
    comm_ = nullptr;
    return expect_success(rc, what + ": plx_comm_destroy");
  }
  // plx_comm_abort; "" or the failure.
  std::string abort(const std::string& what) {
    const plx_result_t rc = plx_comm_abort(comm_);
    comm_ = nullptr;
    return expect_success(rc, what + ": plx_comm_abort");
  }

 private:
  plx_comm_t comm_ = nullptr;
};

// Creates a forked rank's world communicator of n ranks; "" or the failure.
inline std::string open_world(int n, OwnedComm* comm) {
  if (plx_comm_init_from_env(comm->out()) != PLX_SUCCESS) {
    return "plx_comm_init_from_env: " + last_error_text();
  }
  int size = 0;
  if (plx_comm_size(comm->get(), &size) != PLX_SUCCESS || size != n) {
    return "plx_comm_size gave " + std::to_string(size) + ", want " + std::to_string(n);
  }
  return "";
}

// A rank body's "" or failure as the exit code run_ranks wants (0 or 1).
inline int rank_result(int rank, const std::string& why) {
  return why.empty() ? 0 : rank_failure(rank, why);
}

// Runs body(world, rank) on n ranks with `env`, each rank on its world communicator, and expects
// every rank to pass. The body returns "" or what failed; a failure or an exception aborts the
// world (so that the other ranks fail fast) and fails the rank.
inline void expect_ranks_pass(int n, const EnvList& env,
                              const std::function<std::string(plx_comm_t world, int rank)>& body,
                              double limit_s = 120.0) {
  const auto outcomes = run_ranks(
      n,
      [&](int rank) {
        OwnedComm world;
        std::string why = open_world(n, &world);
        if (why.empty()) {
          try {
            why = body(world.get(), rank);
          } catch (const std::exception& e) {
            why = e.what();
          }
        }
        if (why.empty()) why = world.destroy("world");
        return rank_result(rank, why);
      },
      limit_s, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Base of the parameterized tests: skips a transport that does not work on this host, and runs
// `body` on GetParam().ranks ranks with the case's environment (plus `extra`).
class RankCaseTest : public ::testing::TestWithParam<RankCase> {
 protected:
  void SetUp() override {
    if (!transport_available(GetParam().transport)) {
      GTEST_SKIP() << GetParam().transport << " does not work on this host";
    }
  }
  void run(const std::function<int(int rank)>& body, int timeout_ms = 30000,
           const EnvList& extra = {}, double limit_s = 120.0) {
    EnvList env = transport_env(GetParam().transport, timeout_ms);
    env.insert(env.end(), extra.begin(), extra.end());
    const auto outcomes = run_ranks(GetParam().ranks, body, limit_s, env);
    std::string why;
    EXPECT_TRUE(all_passed(outcomes, &why)) << why;
  }
};

}  // namespace plexus::test
