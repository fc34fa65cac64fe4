// allreduce_test.cpp - plx_allreduce on real ranks: forked processes, the real rendezvous, and
// the libfabric transport named by PLEXUS_FI_PROVIDER (tcp, and shm where shm_available()).
//
// The acceptance matrix, on each provider: world sizes 1..5; counts 0, 1, 10007 (prime) and 2^24
// (float32 sum only, to keep CI short); float32, float64, float16, bfloat16 with sum and avg, in
// place and out of place; prod/min/max and the six integer types at small counts. Each world is
// one launch of its ranks, which loop over every case (one fork per world, not per case). A
// second launch per world sets PLEXUS_CHUNK_BYTES=4096 so that every segment is pipelined over
// several slices.
//
// Expected values are closed forms, exact in every datatype whatever the reduction order, so no
// tolerance is needed (tests/comm/collective_reference.h explains the choice of inputs). A
// failure prints the case, the rank and the first wrong index with both values.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

struct AllreduceCase {
  size_t count;
  plx_datatype_t dt;
  plx_red_op_t op;
  bool in_place;

  std::string name() const {
    return std::string(datatype_name(dt)) + " " + op_name(op) + " count=" + std::to_string(count) +
           (in_place ? " in-place" : " out-of-place");
  }
};

constexpr plx_datatype_t kFloatTypes[] = {PLX_FLOAT32, PLX_FLOAT64, PLX_FLOAT16, PLX_BFLOAT16};
constexpr plx_datatype_t kIntTypes[] = {PLX_INT8,   PLX_UINT8, PLX_INT32,
                                        PLX_UINT32, PLX_INT64, PLX_UINT64};
constexpr unsigned char kGuard = 0xa5;

std::vector<AllreduceCase> matrix(bool with_large) {
  std::vector<AllreduceCase> cases;
  for (size_t count : {size_t{0}, size_t{1}, size_t{10007}}) {
    for (plx_datatype_t dt : kFloatTypes) {
      for (plx_red_op_t op : {PLX_SUM, PLX_AVG}) {
        for (bool in_place : {false, true}) cases.push_back({count, dt, op, in_place});
      }
    }
  }
  for (plx_datatype_t dt : kFloatTypes) {
    for (plx_red_op_t op : {PLX_PROD, PLX_MIN, PLX_MAX}) cases.push_back({129, dt, op, false});
  }
  bool in_place = false;
  for (plx_datatype_t dt : kIntTypes) {
    for (int op = 0; op < PLX_NUM_OPS; ++op) {
      cases.push_back({257, dt, static_cast<plx_red_op_t>(op), in_place = !in_place});
    }
  }
  if (with_large) cases.push_back({size_t{1} << 24, PLX_FLOAT32, PLX_SUM, false});
  return cases;
}

// One rank: runs every case through the public C ABI and checks its own result.
int allreduce_rank(int rank, int n, const char* provider, const std::vector<AllreduceCase>& cases) {
  plx_comm_t comm = nullptr;
  const std::string init_error = init_world(n, provider, &comm);
  if (!init_error.empty()) return rank_failure(rank, init_error);
  int failures = 0;
  for (const AllreduceCase& c : cases) {
    const size_t elem = plx_datatype_size(c.dt);
    std::vector<unsigned char> send((c.count + 1) * elem, kGuard), recv(send);
    fill_periodic(send.data(), c.count, elem, input_pattern(c.op, c.dt, rank));
    if (c.in_place) recv = send;
    const std::vector<unsigned char> original = send;
    // count == 0 passes NULL buffers, which plexus.h allows.
    void* rbuf = c.count ? recv.data() : nullptr;
    const void* sbuf = c.count ? (c.in_place ? rbuf : send.data()) : nullptr;
    const plx_result_t rc = plx_allreduce(sbuf, rbuf, c.count, c.dt, c.op, comm, nullptr);
    if (rc != PLX_SUCCESS) {
      rank_failure(rank, c.name() + ": plx_allreduce returned " + plx_get_error_string(rc) + ": " +
                             plx_get_last_error(comm));
      plx_comm_abort(comm);  // the communicator is unusable now; do not hang the others
      return 1;
    }
    std::string why = check_periodic(recv.data(), c.count, c.dt, expected_pattern(c.op, c.dt, n));
    if (why.empty() && recv.back() != kGuard) why = "wrote past the end of recvbuf";
    if (why.empty() && !c.in_place && send != original) why = "modified sendbuf";
    if (!why.empty()) {
      rank_failure(rank, c.name() + ": " + why);
      ++failures;  // keep going: the other ranks still expect this rank in every collective
    }
  }
  return finish_rank(rank, comm, failures);
}

using Param = std::tuple<std::string, int>;  // provider, world size

class AllreduceRanks : public ::testing::TestWithParam<Param> {
 protected:
  void run(const std::vector<AllreduceCase>& cases, const EnvList& extra_env) {
    const auto [provider, n] = GetParam();
    if (provider == "shm" && !shm_available()) GTEST_SKIP() << "shm does not work on this host";
    EnvList env = {{"PLEXUS_FI_PROVIDER", provider}, {"PLEXUS_TIMEOUT_MS", "60000"}};
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    const auto outcomes = run_ranks(
        n, [&](int rank) { return allreduce_rank(rank, n, provider.c_str(), cases); }, 240.0, env);
    std::string why;
    EXPECT_TRUE(all_passed(outcomes, &why)) << provider << ", " << n << " ranks: " << why;
  }
};

TEST_P(AllreduceRanks, MatrixWithDefaultChunk) { run(matrix(/*with_large=*/true), {}); }

TEST_P(AllreduceRanks, MatrixWithSmallChunkPipelines) {
  run(matrix(/*with_large=*/false), {{"PLEXUS_CHUNK_BYTES", "4096"}});
}

std::string param_name(const ::testing::TestParamInfo<Param>& info) {
  return std::get<0>(info.param) + "_" + std::to_string(std::get<1>(info.param)) + "ranks";
}

INSTANTIATE_TEST_SUITE_P(Tcp, AllreduceRanks,
                         ::testing::Combine(::testing::Values(std::string("tcp")),
                                            ::testing::Range(1, 6)),
                         param_name);
INSTANTIATE_TEST_SUITE_P(Shm, AllreduceRanks,
                         ::testing::Combine(::testing::Values(std::string("shm")),
                                            ::testing::Range(1, 6)),
                         param_name);

}  // namespace
}  // namespace plexus::test
