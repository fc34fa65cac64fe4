// hierarchical_test.cpp - the hierarchical algorithms on real ranks: forked processes, the real
// rendezvous and libfabric's tcp provider on the loopback interface (FI_TCP_IFACE=lo), each rank
// setting its own PLEXUS_HOST_ID before plx_comm_init_from_env, so the communicator groups the
// ranks into emulated hosts exactly as it would on a cluster.
//
// Worlds: 2 hosts x 2 ranks, and uneven 3 + 2 with interleaved hosts (A A B A B). On each, every
// hierarchical algorithm is forced with plx_comm_set_algorithm and checked for its result (closed
// forms of tests/comm/collective_reference.h, bit for bit) and for plx_comm_last_algorithm; a
// split communicator runs them on its own layout; and with a two-level PLEXUS_COST_MODEL whose
// network is 40 times slower than the hosts' memory, the automatic choice is the cost model's
// for the world's hosts: the hierarchical allreduce for a large vector on 2 x 2 (on A A B A B
// the model may prefer rabenseifner, whose first halving step stays inside the hosts), a flat
// one for a small vector. On one host the same parameters never choose it. One 2 x 2 world
// measures both levels instead and caches them. On 4 x 2 and on 5 hosts of 6 ranks the allreduce
// runs its lanes by recursive halving at the counts where the model picks it, and on 4 x 2 the
// schedule PLEXUS_HIERARCHICAL_LANES forces.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "comm/algorithms/host_layout.h"
#include "comm/core/communicator.h"
#include "comm/reduce/reduce.h"
#include "comm/tuning/algorithm_id.h"
#include "comm/tuning/cost_cache.h"
#include "comm/tuning/cost_model.h"
#include "comm/tuning/cost_shape.h"
#include "plexus/plexus.h"
#include "tests/comm/collective_calls.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr const char* kForceAll =
    "allreduce:hierarchical, reduce:hierarchical, broadcast:hierarchical, "
    "reduce_scatter:hierarchical, allgather:hierarchical";
// Intra-host 2.5 us, 0.1 ns/B; between hosts 25 us, 4 ns/B (gamma 0.05 ns/B).
constexpr const char* kTwoLevelModel = "2.5,0.1,0.05,25,4";
constexpr size_t kChunkBytes = 16384;  // PLEXUS_CHUNK_BYTES of every world

struct World {
  const char* name;
  std::vector<std::string> hosts;  // PLEXUS_HOST_ID per rank
  int size() const { return static_cast<int>(hosts.size()); }
};

const World k2x2{"2x2", {"hier-test-a", "hier-test-a", "hier-test-b", "hier-test-b"}};
const World k3p2{"3p2", {"hier-test-a", "hier-test-a", "hier-test-b", "hier-test-a",
                         "hier-test-b"}};


// Every hierarchical collective, a few datatypes and ops each, in and out of place, at counts
// that leave lanes empty (1), slice them (1009 with 16 KiB chunks: one slice; 65537: many).
std::vector<Call> forced_calls(int n) {
  std::vector<Call> calls;
  int root = 0;
  const plx_datatype_t types[] = {PLX_FLOAT32, PLX_INT32, PLX_BFLOAT16, PLX_FLOAT64, PLX_UINT8};
  size_t t = 0;
  for (const char* collective :
       {"allreduce", "reduce", "broadcast", "reduce_scatter", "allgather"}) {
    for (size_t count : {size_t{1}, size_t{1009}, size_t{65537}}) {
      for (plx_red_op_t op : {PLX_SUM, PLX_AVG, PLX_MAX}) {
        const bool in_place = (t % 2) == 1;
        calls.push_back({collective, count, types[t++ % std::size(types)], op, in_place,
                         root++ % n});
      }
    }
  }
  return calls;
}

// "" when the last collective on comm ran `want`.
std::string expect_last(plx_comm_t comm, const std::string& want) {
  const char* got = nullptr;
  if (plx_comm_last_algorithm(comm, &got) != PLX_SUCCESS || got == nullptr) {
    return "plx_comm_last_algorithm failed";
  }
  return want == got ? "" : "last algorithm " + std::string(got) + ", want " + want;
}

// Runs `calls` on comm (forced to the hierarchical algorithms); "" or the first failure.
std::string run_forced(plx_comm_t comm, const std::vector<Call>& calls, const std::string& what) {
  const std::string set = expect_success(plx_comm_set_algorithm(comm, kForceAll), what);
  if (!set.empty()) return set;
  for (const Call& c : calls) {
    std::string why = run_call(c, comm);
    if (why.empty()) why = expect_last(comm, std::string(c.collective) + ":hierarchical");
    if (!why.empty()) return what + ": " + describe(c) + ": " + why;
  }
  return "";
}

// The automatic choice for a float32 sum allreduce of `count` elements; "" when it is
// `algorithm` (is) or anything else (!is).
std::string check_choice(plx_comm_t comm, size_t count, const std::string& algorithm, bool is) {
  const Call c{"allreduce", count, PLX_FLOAT32, PLX_SUM, false, 0};
  std::string why = run_call(c, comm);
  if (!why.empty()) return describe(c) + ": " + why;
  const char* got = nullptr;
  plx_comm_last_algorithm(comm, &got);
  if ((got == algorithm) != is) {
    return "automatic choice for " + describe(c) + ": " + got + (is ? ", want " : ", not ") +
           algorithm;
  }
  return "";
}

// One rank of a world: its own host id, then `body` on the world communicator.
int rank_main(int rank, const World& world,
              const std::function<std::string(plx_comm_t comm)>& body) {
  setenv("PLEXUS_HOST_ID", world.hosts[rank].c_str(), 1);
  // run_ranks says every rank is on one host; let the communicator count from the host ids.
  unsetenv("PLEXUS_LOCAL_RANK");
  unsetenv("PLEXUS_LOCAL_WORLD_SIZE");
  OwnedComm comm;
  std::string why = open_world(world.size(), &comm);
  if (why.empty()) why = body(comm.get());
  if (why.empty()) why = comm.destroy(world.name);
  return rank_result(rank, why);
}

EnvList tcp_env(const std::string& cost_model) {
  EnvList env = transport_env("tcp", 30000);
  for (auto& [name, value] : env) {
    if (name == "PLEXUS_COST_MODEL") value = cost_model;
  }
  env.push_back({"FI_TCP_IFACE", "lo"});  // emulated hosts, real loopback
  env.push_back({"PLEXUS_CHUNK_BYTES", std::to_string(kChunkBytes)});
  return env;
}

void run_world(const World& world, const EnvList& env,
               const std::function<std::string(int rank, plx_comm_t comm)>& body) {
  const auto outcomes = run_ranks(
      world.size(),
      [&](int rank) { return rank_main(rank, world, [&](plx_comm_t c) { return body(rank, c); }); },
      120.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << world.name << ": " << why;
}

// "allreduce:<name>" of the cost model's choice for a float32 allreduce of `count` elements on
// `world` with kTwoLevelModel, whose hosts have their peer-memory segments (PLEXUS_SHM is not 0
// in these worlds).
std::string model_choice(const World& world, size_t count) {
  comm::CostParams params;
  comm::parse_cost_model(kTwoLevelModel, 0, &params);
  comm::CostShape shape = comm::cost_shape(comm::host_layout(world.hosts));
  shape.peer_memory = true;
  const auto choice =
      comm::choose(comm::Collective::Allreduce, count * 4, shape, params, kChunkBytes);
  return "allreduce:" + std::string(comm::algorithm_name(choice.algorithm));
}

// Forced algorithms on the world, on a split child, then the automatic choice with the
// two-level model.
std::string emulated_hosts_body(int rank, plx_comm_t comm, const World& world) {
  std::string why = run_forced(comm, forced_calls(world.size()), "world");
  if (!why.empty()) return why;
  // Colors by rank parity: 2x2 gives two children of one rank per host; A A B A B gives
  // A B B (uneven 1 + 2) and A A (one host). A child's layout comes from its parent's host ids.
  plx_comm_t child = nullptr;
  const int color = rank % 2;
  why = expect_success(plx_comm_split(comm, color, rank, &child), "plx_comm_split");
  if (!why.empty()) return why;
  int child_n = 0;
  plx_comm_size(child, &child_n);
  why = run_forced(child, forced_calls(child_n), "split child");
  const plx_result_t destroyed = plx_comm_destroy(child);
  if (why.empty()) why = expect_success(destroyed, "plx_comm_destroy(child)");
  if (!why.empty()) return why;
  // Automatic: the model's choice for 4 MiB and for 8 floats; never hierarchical for 8 floats.
  why = expect_success(plx_comm_set_algorithm(comm, ""), "plx_comm_set_algorithm(\"\")");
  for (size_t count : {size_t{1} << 20, size_t{8}}) {
    if (why.empty()) why = check_choice(comm, count, model_choice(world, count), true);
  }
  if (why.empty()) why = check_choice(comm, 8, "allreduce:hierarchical", false);
  return why;
}

TEST(HierarchicalRanks, TwoHostsOfTwoRanks) {
  ASSERT_EQ(model_choice(k2x2, size_t{1} << 20), "allreduce:hierarchical");
  run_world(k2x2, tcp_env(kTwoLevelModel),
            [](int rank, plx_comm_t comm) { return emulated_hosts_body(rank, comm, k2x2); });
}

TEST(HierarchicalRanks, UnevenInterleavedHosts) {
  run_world(k3p2, tcp_env(kTwoLevelModel),
            [](int rank, plx_comm_t comm) { return emulated_hosts_body(rank, comm, k3p2); });
}

// The allreduce's lanes by recursive halving (lane_halving.h) over real ranks: on 4 x 2 (a power
// of two) and on 5 hosts (one pair of hosts folded in and out; 3 hosts never halve, their 4
// steps being the ring's), forced to the hierarchical allreduce at counts for which the model
// (kTwoLevelModel) halves the lanes, checked bit for bit.
std::vector<Call> halving_calls(const World& world) {
  comm::CostParams params;
  comm::parse_cost_model(kTwoLevelModel, 0, &params);
  comm::CostShape shape = comm::cost_shape(comm::host_layout(world.hosts));
  shape.peer_memory = true;
  shape.eager_bytes = 16384 - 128;  // tcp;ofi_rxm's default, as the communicator reads it
  std::vector<Call> calls;
  size_t t = 0;
  const plx_datatype_t types[] = {PLX_FLOAT32, PLX_INT64, PLX_BFLOAT16};
  for (size_t count : {size_t{2}, size_t{1009}, size_t{4099}, size_t{65537}}) {
    for (plx_red_op_t op : {PLX_SUM, PLX_AVG, PLX_MAX}) {
      const plx_datatype_t type = types[t % std::size(types)];
      if (comm::hierarchical_lane_plan(count * comm::datatype_bytes(type), shape, params,
                                       kChunkBytes)
              .halving) {
        calls.push_back({"allreduce", count, type, op, (t % 2) == 1, 0});
      }
      ++t;
    }
  }
  return calls;
}

const World k4x2{"4x2", {"hier-test-a", "hier-test-a", "hier-test-b", "hier-test-b",
                         "hier-test-c", "hier-test-c", "hier-test-d", "hier-test-d"}};

TEST(HierarchicalRanks, HalvingLanesOnFourAndFiveHosts) {
  // Five hosts, one of two ranks (two lanes, the other hosts holding both): P = 4, and hosts a
  // and b fold into one member of the halving.
  const World k5{"5 hosts", {"hier-test-a", "hier-test-b", "hier-test-c", "hier-test-a",
                             "hier-test-d", "hier-test-e"}};
  for (const World* world : {&k4x2, &k5}) {
    const std::vector<Call> calls = halving_calls(*world);
    ASSERT_GE(calls.size(), 3u) << world->name << ": the model should halve the lanes";
    run_world(*world, tcp_env(kTwoLevelModel), [&](int, plx_comm_t comm) {
      return run_forced(comm, calls, world->name);
    });
  }
}

// PLEXUS_HIERARCHICAL_LANES over real ranks on 4 x 2: lanes forced to halving run it at the
// counts where the model keeps the ring, lanes forced to the ring run it where the model halves,
// bit for bit, each rank recording the schedule it ran, and plx_comm_predict_time prices the
// forced schedule; a split child keeps its parent's schedule whatever the environment says
// then. (Ranks whose settings differ fail at creation: argument_checks_test.cpp.)
TEST(HierarchicalRanks, LanesForcedByTheUser) {
  comm::CostParams params;
  ASSERT_EQ(comm::parse_cost_model(kTwoLevelModel, 0, &params), PLX_SUCCESS);
  comm::CostShape shape = comm::cost_shape(comm::host_layout(k4x2.hosts));
  shape.peer_memory = true;
  shape.eager_bytes = 16384 - 128;  // tcp;ofi_rxm's default, as the communicator reads it
  std::vector<Call> model_ring, model_halving;
  size_t t = 0;
  for (size_t count : {size_t{2}, size_t{1009}, size_t{65537}, size_t{262147}}) {
    for (plx_red_op_t op : {PLX_SUM, PLX_MAX}) {
      const Call c{"allreduce", count, PLX_FLOAT32, op, (t++ % 2) == 1, 0};
      (comm::hierarchical_lane_plan(count * 4, shape, params, kChunkBytes).halving
           ? model_halving
           : model_ring)
          .push_back(c);
    }
  }
  ASSERT_GE(model_ring.size(), 2u) << "the model should keep the ring at some counts";
  ASSERT_GE(model_halving.size(), 2u) << "and halve the lanes at others";
  struct Forced {
    const char* lanes;
    comm::LaneSchedule schedule;
    const std::vector<Call>* calls;
    bool halving;
  };
  for (const Forced& forced :
       {Forced{"halving", comm::LaneSchedule::Halving, &model_ring, true},
        Forced{"ring", comm::LaneSchedule::Ring, &model_halving, false}}) {
    comm::CostShape forced_shape = shape;
    forced_shape.lanes = forced.schedule;
    EnvList env = tcp_env(kTwoLevelModel);
    env.push_back({"PLEXUS_HIERARCHICAL_LANES", forced.lanes});
    run_world(k4x2, env, [&](int rank, plx_comm_t comm) {
      const std::string what = std::string(forced.lanes) + ": ";
      for (const Call& c : *forced.calls) {
        const std::string why = run_forced(comm, {c}, k4x2.name);
        if (!why.empty()) return what + why;
        if (comm->last_lane_halving != forced.halving) {
          return what + describe(c) + " ran " + (comm->last_lane_halving ? "halving" : "ring") +
                 " lanes";
        }
        double seconds = 0;
        if (plx_comm_predict_time(comm, "allreduce", c.count, PLX_FLOAT32, nullptr,
                                  k4x2.size(), &seconds) != PLX_SUCCESS) {
          return what + "plx_comm_predict_time failed";
        }
        const double want = comm::predict_seconds(comm::AlgorithmId::AllreduceHierarchical,
                                                  c.count * 4, forced_shape, params, kChunkBytes);
        if (std::abs(seconds - want) > 1e-12 * want) {
          return what + describe(c) + ": predicted " + std::to_string(seconds) + " s, the " +
                 "forced schedule's price " + std::to_string(want) + " s";
        }
      }
      // The environment changes; a split child keeps the world's schedule.
      setenv("PLEXUS_HIERARCHICAL_LANES", forced.halving ? "ring" : "halving", 1);
      plx_comm_t child = nullptr;
      std::string why = expect_success(plx_comm_split(comm, 0, rank, &child), "plx_comm_split");
      if (!why.empty()) return what + why;
      why = run_forced(child, {forced.calls->front()}, "split child");
      if (why.empty() && child->last_lane_halving != forced.halving) {
        why = "the split child ran the other schedule";
      }
      const plx_result_t destroyed = plx_comm_destroy(child);
      if (why.empty()) why = expect_success(destroyed, "plx_comm_destroy(child)");
      return why.empty() ? why : what + why;
    });
  }
}

// Lane steps longer than the chunk (hierarchical_segments.h hierarchical_lane_step_limit) over
// real ranks: UCX (no eager limit, as the efa provider) and a model whose link between hosts is
// RDMA-class (100 us at 12.5 GB/s: 8 alpha / beta is 10 MB, above the 16 KiB chunk and 1 MiB),
// so the plan takes steps of 4 to 8 chunks, in 3 to 9 segments at 1 and 4 MiB (one at
// 256 KiB); every rank derives the same plan. (Over tcp;ofi_rxm, with its eager limit, the step
// never grows.)
constexpr const char* kRdmaModel = "2.5,0.1,0.05,100,0.08";

TEST(HierarchicalRanks, LaneStepsLongerThanTheChunkOnAnRdmaClassLink) {
  comm::CostParams params;
  ASSERT_EQ(comm::parse_cost_model(kRdmaModel, 0, &params), PLX_SUCCESS);
  const World k3x2{"3x2", {"hier-test-a", "hier-test-a", "hier-test-b", "hier-test-b",
                           "hier-test-c", "hier-test-c"}};
  EnvList env = transport_env("ucx");
  for (auto& [name, value] : env) {
    if (name == "PLEXUS_COST_MODEL") value = kRdmaModel;
  }
  env.push_back({"PLEXUS_CHUNK_BYTES", std::to_string(kChunkBytes)});
  for (const World* world : {&k2x2, &k3x2}) {
    comm::CostShape shape = comm::cost_shape(comm::host_layout(world->hosts));
    shape.peer_memory = true;
    std::vector<Call> calls;
    std::vector<size_t> steps;  // the plan's lane step for each call
    size_t several = 0;
    size_t t = 0;
    for (size_t count : {size_t{65537}, size_t{262147}, (size_t{1} << 20) + 5}) {
      for (plx_red_op_t op : {PLX_SUM, PLX_MAX}) {
        const size_t bytes = count * 4;
        const comm::HierarchicalLanePlan plan =
            comm::hierarchical_lane_plan(bytes, shape, params, kChunkBytes);
        const auto parts = comm::explain_hierarchical_allreduce(bytes, shape, params, kChunkBytes);
        ASSERT_TRUE(parts.has_value()) << world->name;
        if (plan.step_bytes > kChunkBytes) {
          calls.push_back({"allreduce", count, PLX_FLOAT32, op, (t++ % 2) == 1, 0});
          steps.push_back(plan.step_bytes);
          if (parts->segments > 1) ++several;
        }
      }
    }
    ASSERT_GE(calls.size(), 4u) << world->name << ": the plan should lengthen the lane step";
    ASSERT_GE(several, 2u) << world->name << ": and cut several segments of those steps";
    // tcp;ofi_rxm's eager limit keeps the step.
    shape.eager_bytes = 16384 - 128;
    EXPECT_EQ(comm::hierarchical_lane_plan(calls[0].count * 4, shape, params, kChunkBytes)
                  .step_bytes,
              kChunkBytes)
        << world->name;
    // Each call runs with the plan's step (the step each rank's communicator records).
    run_world(*world, env, [&](int, plx_comm_t comm) {
      for (size_t i = 0; i < calls.size(); ++i) {
        const std::string why = run_forced(comm, {calls[i]}, world->name);
        if (!why.empty()) return why;
        if (comm->last_lane_step_bytes != steps[i]) {
          return std::string(world->name) + ": " + describe(calls[i]) + " ran lane steps of " +
                 std::to_string(comm->last_lane_step_bytes) + " bytes, the plan " +
                 std::to_string(steps[i]);
        }
      }
      return std::string();
    });
  }
}

TEST(HierarchicalRanks, OneHostNeverChoosesHierarchical) {
  const World one{"1x4", {"hier-test-a", "hier-test-a", "hier-test-a", "hier-test-a"}};
  run_world(one, tcp_env(kTwoLevelModel), [](int, plx_comm_t comm) {
    for (size_t count : {size_t{8}, size_t{1} << 16, size_t{1} << 20}) {
      const std::string why = check_choice(comm, count, "allreduce:hierarchical", false);
      if (!why.empty()) return why;
    }
    return std::string();
  });
}

TEST(HierarchicalRanks, MeasuresAndCachesBothLevels) {
  const std::string dir = scratch_cache_dir() + "/two-level";
  EnvList env = tcp_env("");
  for (auto it = env.begin(); it != env.end();) {
    it = it->first == "PLEXUS_COST_MODEL" ? env.erase(it) : it + 1;
  }
  env.push_back({"PLEXUS_CACHE_DIR", dir});
  run_world(k2x2, env, [](int, plx_comm_t comm) {
    return run_call({"allreduce", 1009, PLX_FLOAT32, PLX_SUM, false, 0}, comm);
  });
  comm::CostParams cached;
  std::string why;
  const std::string path =
      dir + "/" + comm::cost_cache_file_name("hier-test-a", "tcp;ofi_rxm");
  ASSERT_TRUE(comm::read_cost_cache(path, "hier-test-a", "tcp;ofi_rxm", &cached, &why)) << why;
  EXPECT_TRUE(cached.two_level()) << comm::format_cost_params(cached);
  EXPECT_GT(cached.inter_alpha_s, 0);
  EXPECT_GT(cached.alpha_s, 0);
}

}  // namespace
}  // namespace plexus::test
