// transport_test.cpp - point-to-point messages through the C++ Transport of a real
// communicator, between real processes, over every provider that works here.
//
// Each case forks `n` ranks that create a world communicator from the environment and then use
// comm->transport directly for tests/comm/point_to_point_checks.h: messages of 0 bytes, 1 byte,
// 5 bytes into a larger buffer and 7 MiB to every rank (itself included) with receives posted in
// the reverse order of the sends; 200 tags to the right neighbour received in a shuffled order;
// and a receive completed by polling test(). Every byte is checked against a closed-form pattern;
// a failure names rank, peer, index.
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "comm/core/communicator.h"
#include "plexus/plexus.h"
#include "tests/comm/point_to_point_checks.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using comm::Transport;

int transport_body(int rank, int n, const std::string& provider) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, "plx_comm_init_from_env: " + last_error());
  }
  Transport& t = *comm->transport;
  if (t.rank() != rank || t.size() != n) return rank_failure(rank, "transport rank/size wrong");
  const std::string name = t.name();
  if (name.find(provider) == std::string::npos) {
    return rank_failure(rank, "transport is " + name + ", expected " + provider);
  }
  if (int failed = point_to_point_checks(t, rank, n)) return failed;
  if (plx_comm_destroy(comm) != PLX_SUCCESS) {
    return rank_failure(rank, "plx_comm_destroy: " + last_error());
  }
  return 0;
}

struct Case {
  std::string provider;  // PLEXUS_FI_PROVIDER
  int ranks;
  std::string max_msg_bytes;  // PLEXUS_FI_MAX_MSG_BYTES ("" = provider's own)
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << c.provider << ", " << c.ranks << " ranks";
  if (!c.max_msg_bytes.empty()) *out << ", PLEXUS_FI_MAX_MSG_BYTES=" << c.max_msg_bytes;
}

class TransportTest : public ::testing::TestWithParam<Case> {};

TEST_P(TransportTest, PointToPointMessagesArriveIntact) {
  const Case& c = GetParam();
  if (c.provider == "shm" && !shm_available()) GTEST_SKIP() << "shm provider does not work here";
  EnvList env = {{"PLEXUS_FI_PROVIDER", c.provider}, {"PLEXUS_TIMEOUT_MS", "60000"}};
  if (!c.max_msg_bytes.empty()) env.push_back({"PLEXUS_FI_MAX_MSG_BYTES", c.max_msg_bytes});
  const std::string provider = c.provider;
  const int n = c.ranks;
  auto outcomes = run_ranks(
      n, [&](int rank) { return transport_body(rank, n, provider); }, 240, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* provider : {"tcp", "shm"}) {
    for (int n = 1; n <= 5; ++n) out.push_back({provider, n, ""});
    out.push_back({provider, 3, "64K"});  // 7 MiB messages split into 112 parts
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Providers, TransportTest, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.provider + "_" +
                                              std::to_string(info.param.ranks) + "ranks";
                           if (!info.param.max_msg_bytes.empty()) name += "_split";
                           return name;
                         });

}  // namespace
}  // namespace plexus::test
