// broadcast_test.cpp - plx_broadcast on real ranks over tcp and shm (forked processes, real
// rendezvous, real libfabric transport). The shm cases skip where shm_available() says no.
//
// World sizes 1..5; roots 0, n/2 and n-1; counts 0, 1, 1000, 10007 (prime) and 2^22; int8,
// float16, float32, float64; the root in place (sendbuf == recvbuf) and out of place, in turn;
// non-root ranks pass a NULL sendbuf, as plexus.h allows. One launch per world: the ranks loop
// over every case. PLEXUS_CHUNK_BYTES=4096, so a message below 4096 bytes takes the binomial
// tree (up to 1000 float16 elements) and a larger one the chain pipelined in 4096-byte slices.
// Expected values are a closed form of the root and the index; a failure names the case, the
// rank and the first wrong index.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <tuple>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

struct BroadcastCase {
  size_t count;
  plx_datatype_t dt;
  int root;
  bool in_place;

  std::string name() const {
    return std::string(datatype_name(dt)) + " root=" + std::to_string(root) +
           " count=" + std::to_string(count) + (in_place ? " in-place" : " out-of-place");
  }
};

constexpr unsigned char kGuard = 0xa5;

std::vector<BroadcastCase> cases_for(int n) {
  std::vector<BroadcastCase> cases;
  bool in_place = false;
  for (int root : roots(n)) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{1000}, size_t{10007}}) {
      for (plx_datatype_t dt : {PLX_INT8, PLX_FLOAT16, PLX_FLOAT64}) {
        cases.push_back({count, dt, root, in_place = !in_place});
      }
    }
  }
  cases.push_back({size_t{1} << 22, PLX_FLOAT32, n - 1, false});
  cases.push_back({size_t{1} << 22, PLX_FLOAT16, n / 2, true});
  return cases;
}

int broadcast_rank(int rank, int n, const char* provider) {
  plx_comm_t comm = nullptr;
  const std::string init_error = init_world(n, provider, &comm);
  if (!init_error.empty()) return rank_failure(rank, init_error);
  int failures = 0;
  for (const BroadcastCase& c : cases_for(n)) {
    const size_t elem = plx_datatype_size(c.dt);
    const bool root = rank == c.root;
    const std::vector<unsigned char> payload = broadcast_pattern(c.dt, c.root);
    std::vector<unsigned char> send((c.count + 1) * elem, kGuard), recv(send);
    fill_periodic(send.data(), c.count, elem, payload);
    fill_periodic(recv.data(), c.count, elem, broadcast_pattern(c.dt, c.root + 1));  // stale
    if (root && c.in_place) recv = send;
    const std::vector<unsigned char> original = send;
    void* rbuf = c.count ? recv.data() : nullptr;
    const void* sbuf = !root || c.count == 0 ? nullptr : c.in_place ? rbuf : send.data();
    const plx_result_t rc = plx_broadcast(sbuf, rbuf, c.count, c.dt, c.root, comm, nullptr);
    if (rc != PLX_SUCCESS) {
      rank_failure(rank, c.name() + ": plx_broadcast returned " + plx_get_error_string(rc) + ": " +
                             plx_get_last_error(comm));
      plx_comm_abort(comm);
      return 1;
    }
    std::string why = check_periodic(recv.data(), c.count, c.dt, payload);
    if (why.empty() && recv.back() != kGuard) why = "wrote past the end of recvbuf";
    if (why.empty() && send != original) why = "modified sendbuf";
    if (!why.empty()) {
      rank_failure(rank, c.name() + ": " + why);
      ++failures;
    }
  }
  return finish_rank(rank, comm, failures);
}

using Param = std::tuple<std::string, int>;  // provider, world size

class BroadcastRanks : public ::testing::TestWithParam<Param> {};

TEST_P(BroadcastRanks, TreeAndChainFromSeveralRoots) {
  const auto [provider, n] = GetParam();
  if (provider == "shm" && !shm_available()) GTEST_SKIP() << "shm does not work on this host";
  const EnvList env = {{"PLEXUS_FI_PROVIDER", provider},
                       {"PLEXUS_TIMEOUT_MS", "60000"},
                       {"PLEXUS_CHUNK_BYTES", "4096"}};
  const auto outcomes = run_ranks(
      n, [&](int rank) { return broadcast_rank(rank, n, provider.c_str()); }, 240.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << provider << ", " << n << " ranks: " << why;
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Tcp, BroadcastRanks,
                         ::testing::Combine(::testing::Values(std::string("tcp")),
                                            ::testing::Range(1, 6)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Shm, BroadcastRanks,
                         ::testing::Combine(::testing::Values(std::string("shm")),
                                            ::testing::Range(1, 6)),
                         param_name);

}  // namespace
}  // namespace plexus::test
