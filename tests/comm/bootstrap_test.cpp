// bootstrap_test.cpp - who-am-I discovery and the rendezvous.
//
// Environment discovery runs in this process (no network): each launcher family's variables
// are set, parsed and compared; malformed values must fail with PLX_ERROR_INVALID_ARGUMENT and
// a message naming the variable and its value. The rendezvous tests fork real ranks: a unique id
// made here (its server runs in this test process) reaches the children through fork(), and
// each joins with plx_comm_init_rank; queries, host-id based local ranks, disagreements and two
// coexisting communicators are checked there.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "comm/base/config.h"
#include "comm/bootstrap/launcher_env.h"
#include "comm/core/communicator.h"
#include "plexus/plexus.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

const char* const kLauncherVariables[] = {
    "PLEXUS_RANK", "PLEXUS_WORLD_SIZE", "PLEXUS_LOCAL_RANK", "PLEXUS_LOCAL_WORLD_SIZE",
    "PLEXUS_MASTER_ADDR", "PLEXUS_MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
    "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "OMPI_COMM_WORLD_RANK",
    "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "SLURM_PROCID",
    "SLURM_NTASKS", "SLURM_LOCALID"};

// Clears every launcher variable before and after each test, so tests do not leak into each
// other (or into the children that later tests fork).
class LauncherEnvTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : kLauncherVariables) unsetenv(name);
  }
  static void set(const char* name, const char* value) { setenv(name, value, 1); }

  // Expects plx_comm_init_from_env to reject the environment, naming `fragment`.
  static void expect_rejected(const std::string& fragment) {
    plx_comm_t comm = reinterpret_cast<plx_comm_t>(0x1);  // must stay untouched
    EXPECT_EQ(plx_comm_init_from_env(&comm), PLX_ERROR_INVALID_ARGUMENT);
    EXPECT_EQ(comm, reinterpret_cast<plx_comm_t>(0x1));
    const std::string message = plx_get_last_error(nullptr);
    EXPECT_EQ(message.rfind("plx_comm_init_from_env: ", 0), 0u) << message;
    EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
};

TEST_F(LauncherEnvTest, NothingSetMeansAWorldOfOne) {
  bootstrap::LauncherEnv env;
  ASSERT_EQ(bootstrap::read_launcher_env(&env), PLX_SUCCESS);
  EXPECT_EQ(env.family, "none");
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 1);
  EXPECT_EQ(env.local_rank, -1);
  EXPECT_EQ(env.master_addr, "127.0.0.1");
  EXPECT_EQ(env.master_port, 29500);
}

TEST_F(LauncherEnvTest, PlexusVariables) {
  set("PLEXUS_RANK", "3");
  set("PLEXUS_WORLD_SIZE", "8");
  set("PLEXUS_LOCAL_RANK", "1");
  set("PLEXUS_LOCAL_WORLD_SIZE", "4");
  set("PLEXUS_MASTER_ADDR", "10.1.2.3");
  set("PLEXUS_MASTER_PORT", "1234");
  set("MASTER_ADDR", "10.9.9.9");  // PLEXUS_* wins over the torchrun names
  set("RANK", "5");
  set("WORLD_SIZE", "6");
  bootstrap::LauncherEnv env;
  ASSERT_EQ(bootstrap::read_launcher_env(&env), PLX_SUCCESS) << plx_get_last_error(nullptr);
  EXPECT_EQ(env.family, "PLEXUS");
  EXPECT_EQ(env.rank, 3);
  EXPECT_EQ(env.world_size, 8);
  EXPECT_EQ(env.local_rank, 1);
  EXPECT_EQ(env.local_size, 4);
  EXPECT_EQ(env.master_addr, "10.1.2.3");
  EXPECT_EQ(env.master_port, 1234);
}

TEST_F(LauncherEnvTest, Torchrun) {
  set("RANK", "5");
  set("WORLD_SIZE", "6");
  set("LOCAL_RANK", "2");
  set("LOCAL_WORLD_SIZE", "3");
  set("MASTER_ADDR", "node7");
  set("MASTER_PORT", "29400");
  bootstrap::LauncherEnv env;
  ASSERT_EQ(bootstrap::read_launcher_env(&env), PLX_SUCCESS) << plx_get_last_error(nullptr);
  EXPECT_EQ(env.family, "torchrun");
  EXPECT_EQ(env.rank, 5);
  EXPECT_EQ(env.world_size, 6);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_size, 3);
  EXPECT_EQ(env.master_addr, "node7");
  EXPECT_EQ(env.master_port, 29400);
}

TEST_F(LauncherEnvTest, OpenMpi) {
  set("OMPI_COMM_WORLD_RANK", "0");
  set("OMPI_COMM_WORLD_SIZE", "2");
  set("OMPI_COMM_WORLD_LOCAL_RANK", "0");
  set("OMPI_COMM_WORLD_LOCAL_SIZE", "1");
  set("PMI_RANK", "1");  // a later family: ignored
  set("PMI_SIZE", "9");
  bootstrap::LauncherEnv env;
  ASSERT_EQ(bootstrap::read_launcher_env(&env), PLX_SUCCESS) << plx_get_last_error(nullptr);
  EXPECT_EQ(env.family, "Open MPI");
  EXPECT_EQ(env.rank, 0);
  EXPECT_EQ(env.world_size, 2);
  EXPECT_EQ(env.local_rank, 0);
  EXPECT_EQ(env.local_size, 1);
}

TEST_F(LauncherEnvTest, Mpich) {
  set("PMI_RANK", "6");
  set("PMI_SIZE", "7");
  set("MPI_LOCALRANKID", "2");
  set("MPI_LOCALNRANKS", "4");
  bootstrap::LauncherEnv env;
  ASSERT_EQ(bootstrap::read_launcher_env(&env), PLX_SUCCESS) << plx_get_last_error(nullptr);
  EXPECT_EQ(env.family, "MPICH");
  EXPECT_EQ(env.rank, 6);
  EXPECT_EQ(env.world_size, 7);
  EXPECT_EQ(env.local_rank, 2);
  EXPECT_EQ(env.local_size, 4);
}

TEST_F(LauncherEnvTest, Slurm) {
  set("SLURM_PROCID", "11");
  set("SLURM_NTASKS", "16");
  set("SLURM_LOCALID", "3");
  bootstrap::LauncherEnv env;
  ASSERT_EQ(bootstrap::read_launcher_env(&env), PLX_SUCCESS) << plx_get_last_error(nullptr);
  EXPECT_EQ(env.family, "Slurm");
  EXPECT_EQ(env.rank, 11);
  EXPECT_EQ(env.world_size, 16);
  EXPECT_EQ(env.local_rank, 3);
  EXPECT_EQ(env.local_size, -1);  // Slurm gives no local size: computed from host ids
}

TEST_F(LauncherEnvTest, MalformedValuesNameTheVariable) {
  set("PLEXUS_RANK", "abc");
  set("PLEXUS_WORLD_SIZE", "4");
  expect_rejected("PLEXUS_RANK=abc");
  clear();
  set("RANK", "-1");
  set("WORLD_SIZE", "4");
  expect_rejected("RANK=-1");
  clear();
  set("OMPI_COMM_WORLD_RANK", "0");
  set("OMPI_COMM_WORLD_SIZE", "0");
  expect_rejected("OMPI_COMM_WORLD_SIZE=0");
  clear();
  set("PMI_RANK", "4");
  set("PMI_SIZE", "4");
  expect_rejected("PMI_RANK=4 is not below PMI_SIZE=4");
  clear();
  set("SLURM_PROCID", "2");
  expect_rejected("SLURM_PROCID=2 is set but SLURM_NTASKS is not");
  clear();
  set("PLEXUS_MASTER_PORT", "70000");
  expect_rejected("PLEXUS_MASTER_PORT=70000");
  clear();
  set("LOCAL_RANK", "1x");
  expect_rejected("LOCAL_RANK=1x");
  clear();
  set("PLEXUS_LOCAL_RANK", "3");
  set("PLEXUS_LOCAL_WORLD_SIZE", "2");
  expect_rejected("PLEXUS_LOCAL_RANK=3 is not below PLEXUS_LOCAL_WORLD_SIZE=2");
}

TEST_F(LauncherEnvTest, MalformedConfigValueNamesTheVariable) {
  setenv("PLEXUS_TIMEOUT_MS", "soon", 1);
  plx_comm_t comm = nullptr;
  EXPECT_EQ(plx_comm_init_from_env(&comm), PLX_ERROR_INVALID_ARGUMENT);
  const std::string message = plx_get_last_error(nullptr);
  EXPECT_NE(message.find("PLEXUS_TIMEOUT_MS=soon"), std::string::npos) << message;
  unsetenv("PLEXUS_TIMEOUT_MS");
}

TEST(ConfigTable, ListsEveryVariableOnce) {
  std::vector<std::string> names;
  for (const auto& var : config_variables()) {
    EXPECT_EQ(std::string(var.name).rfind("PLEXUS_", 0), 0u) << var.name;
    EXPECT_FALSE(var.help.empty()) << var.name;
    for (const auto& seen : names) EXPECT_NE(seen, var.name);
    names.emplace_back(var.name);
  }
  for (const char* required : {"PLEXUS_RANK", "PLEXUS_WORLD_SIZE", "PLEXUS_LOCAL_RANK",
                               "PLEXUS_LOCAL_WORLD_SIZE", "PLEXUS_MASTER_ADDR",
                               "PLEXUS_MASTER_PORT", "PLEXUS_FI_PROVIDER", "PLEXUS_TIMEOUT_MS",
                               "PLEXUS_CHUNK_BYTES", "PLEXUS_DEBUG", "PLEXUS_HOST_ID"}) {
    EXPECT_NE(find_config_variable(required), nullptr) << required;
  }
  char* text = nullptr;
  size_t length = 0;
  FILE* out = open_memstream(&text, &length);
  print_config_table(out);
  std::fclose(out);
  const std::string printed(text, length);
  std::free(text);
  EXPECT_NE(printed.find("PLEXUS_TIMEOUT_MS (integer, default: 300000)"), std::string::npos)
      << printed;
}

TEST(ConfigTable, TypedGettersParseAndDefault) {
  unsetenv("PLEXUS_CHUNK_BYTES");
  size_t chunk = 0;
  ASSERT_EQ(config_chunk_bytes(&chunk), PLX_SUCCESS);
  EXPECT_EQ(chunk, size_t{1} << 20);
  setenv("PLEXUS_CHUNK_BYTES", "256K", 1);
  ASSERT_EQ(config_chunk_bytes(&chunk), PLX_SUCCESS);
  EXPECT_EQ(chunk, size_t{256} << 10);
  setenv("PLEXUS_CHUNK_BYTES", "12x", 1);
  EXPECT_EQ(config_chunk_bytes(&chunk), PLX_ERROR_INVALID_ARGUMENT);
  unsetenv("PLEXUS_CHUNK_BYTES");
  int timeout_ms = 0;
  ASSERT_EQ(config_timeout_ms(&timeout_ms), PLX_SUCCESS);
  EXPECT_EQ(timeout_ms, 300000);
  unsetenv("PLEXUS_SPIN_US");
  int spin_us = -1;
  ASSERT_EQ(config_spin_us(&spin_us), PLX_SUCCESS);
  EXPECT_EQ(spin_us, 200);
  setenv("PLEXUS_SPIN_US", "0", 1);
  ASSERT_EQ(config_spin_us(&spin_us), PLX_SUCCESS);
  EXPECT_EQ(spin_us, 0);
  for (const char* bad : {"abc", "-1", "1000001"}) {
    setenv("PLEXUS_SPIN_US", bad, 1);
    EXPECT_EQ(config_spin_us(&spin_us), PLX_ERROR_INVALID_ARGUMENT) << bad;
    EXPECT_EQ(std::string(plx_get_last_error(nullptr)),
              std::string("PLEXUS_SPIN_US=") + bad + " is not an integer in 0..1000000");
  }
  unsetenv("PLEXUS_SPIN_US");
}

TEST(UniqueId, NullAndMalformedIdsAreRejected) {
  EXPECT_EQ(plx_get_unique_id(nullptr), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(plx_get_last_error(nullptr), "plx_get_unique_id: id is NULL");
  plx_unique_id_t garbage;
  std::memset(&garbage, 0x5a, sizeof(garbage));
  plx_comm_t comm = nullptr;
  EXPECT_EQ(plx_comm_init_rank(&comm, 2, garbage, 0), PLX_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(comm, nullptr);
  const std::string message = plx_get_last_error(nullptr);
  EXPECT_EQ(message.rfind("plx_comm_init_rank: rank 0: unique id is malformed", 0), 0u)
      << message;
}

// --- Rendezvous through plx_get_unique_id, across forked ranks. ---

// Makes a unique id whose server runs in this (test) process, on loopback.
plx_unique_id_t loopback_unique_id() {
  setenv("PLEXUS_MASTER_ADDR", "127.0.0.1", 1);
  plx_unique_id_t id;
  EXPECT_EQ(plx_get_unique_id(&id), PLX_SUCCESS) << plx_get_last_error(nullptr);
  unsetenv("PLEXUS_MASTER_ADDR");
  return id;
}

std::string last_error() { return plx_get_last_error(nullptr); }

struct RendezvousCase {
  std::string provider;
  int ranks;
};

void PrintTo(const RendezvousCase& c, std::ostream* out) {
  *out << c.provider << ", " << c.ranks << " ranks";
}

class RendezvousTest : public ::testing::TestWithParam<RendezvousCase> {};

TEST_P(RendezvousTest, UniqueIdJoinsEveryRank) {
  const auto [provider, n] = GetParam();
  if (provider == "shm" && !shm_available()) GTEST_SKIP() << "shm does not work here";
  const plx_unique_id_t id = loopback_unique_id();
  auto outcomes = run_ranks(n, [&, n = n, provider = provider](int rank) {
    plx_comm_t comm = nullptr;
    if (plx_comm_init_rank(&comm, n, id, rank) != PLX_SUCCESS) {
      return rank_failure(rank, "plx_comm_init_rank: " + last_error());
    }
    int got_rank = -1, size = -1, local_rank = -1, local_size = -1;
    const char* name = nullptr;
    if (plx_comm_rank(comm, &got_rank) != PLX_SUCCESS || plx_comm_size(comm, &size) ||
        plx_comm_local_rank(comm, &local_rank) || plx_comm_local_size(comm, &local_size) ||
        plx_comm_transport_name(comm, &name)) {
      return rank_failure(rank, "query failed: " + last_error());
    }
    // One host: local rank = rank, local size = n (from host ids; plx_comm_init_rank ignores
    // the PLEXUS_LOCAL_* variables run_ranks sets).
    if (got_rank != rank || size != n || local_rank != rank || local_size != n) {
      return rank_failure(rank, "rank/size/local " + std::to_string(got_rank) + "/" +
                                    std::to_string(size) + "/" + std::to_string(local_rank) +
                                    "/" + std::to_string(local_size));
    }
    if (std::string(name).find(provider) == std::string::npos) {
      return rank_failure(rank, std::string("transport ") + name + ", expected " + provider);
    }
    plx_result_t async = PLX_ERROR_INTERNAL;
    if (plx_comm_get_async_error(comm, &async) != PLX_SUCCESS || async != PLX_SUCCESS) {
      return rank_failure(rank, "async error set on a healthy communicator");
    }
    if (plx_comm_destroy(comm) != PLX_SUCCESS) {
      return rank_failure(rank, "plx_comm_destroy: " + last_error());
    }
    return 0;
  }, 120, {{"PLEXUS_FI_PROVIDER", provider}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

std::vector<RendezvousCase> rendezvous_cases() {
  std::vector<RendezvousCase> out;
  for (const char* provider : {"tcp", "shm"}) {
    for (int n = 1; n <= 5; ++n) out.push_back({provider, n});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Providers, RendezvousTest, ::testing::ValuesIn(rendezvous_cases()),
                         [](const ::testing::TestParamInfo<RendezvousCase>& info) {
                           return info.param.provider + "_" + std::to_string(info.param.ranks) +
                                  "ranks";
                         });

TEST(Rendezvous, LocalRanksComeFromHostIds) {
  // Two emulated hosts: ranks 0, 1 on "a", ranks 2, 3, 4 on "b". Loopback only (FI_TCP_IFACE).
  const plx_unique_id_t id = loopback_unique_id();
  auto outcomes = run_ranks(5, [&](int rank) {
    setenv("PLEXUS_HOST_ID", rank < 2 ? "host-a" : "host-b", 1);
    plx_comm_t comm = nullptr;
    if (plx_comm_init_rank(&comm, 5, id, rank) != PLX_SUCCESS) {
      return rank_failure(rank, "plx_comm_init_rank: " + last_error());
    }
    int local_rank = -1, local_size = -1;
    plx_comm_local_rank(comm, &local_rank);
    plx_comm_local_size(comm, &local_size);
    const int want_rank = rank < 2 ? rank : rank - 2;
    const int want_size = rank < 2 ? 2 : 3;
    if (local_rank != want_rank || local_size != want_size) {
      return rank_failure(rank, "local " + std::to_string(local_rank) + "/" +
                                    std::to_string(local_size));
    }
    return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error());
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"FI_TCP_IFACE", "lo"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(Rendezvous, EnvPathComputesLocalRanksWhenNotGiven) {
  auto outcomes = run_ranks(3, [](int rank) {
    unsetenv("PLEXUS_LOCAL_RANK");
    unsetenv("PLEXUS_LOCAL_WORLD_SIZE");
    plx_comm_t comm = nullptr;
    if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
      return rank_failure(rank, "plx_comm_init_from_env: " + last_error());
    }
    int local_rank = -1, local_size = -1;
    plx_comm_local_rank(comm, &local_rank);
    plx_comm_local_size(comm, &local_size);
    if (local_rank != rank || local_size != 3) return rank_failure(rank, "local rank/size");
    return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error());
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(Rendezvous, DuplicateRankFailsEveryRank) {
  const plx_unique_id_t id = loopback_unique_id();
  auto outcomes = run_ranks(3, [&](int rank) {
    const int claimed = rank == 2 ? 1 : rank;  // ranks 1 and 2 both claim rank 1
    plx_comm_t comm = nullptr;
    if (plx_comm_init_rank(&comm, 3, id, claimed) != PLX_ERROR_REMOTE) {
      return rank_failure(rank, "expected PLX_ERROR_REMOTE, got: " + last_error());
    }
    if (last_error().find("two ranks claim rank 1") == std::string::npos) {
      return rank_failure(rank, "message: " + last_error());
    }
    return comm == nullptr ? 0 : rank_failure(rank, "comm written on failure");
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_TIMEOUT_MS", "20000"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(Rendezvous, DisagreeingNranksFailsEveryRank) {
  const plx_unique_id_t id = loopback_unique_id();
  auto outcomes = run_ranks(2, [&](int rank) {
    plx_comm_t comm = nullptr;
    if (plx_comm_init_rank(&comm, rank == 0 ? 2 : 3, id, rank) != PLX_ERROR_REMOTE) {
      return rank_failure(rank, "expected PLX_ERROR_REMOTE, got: " + last_error());
    }
    const std::string message = last_error();
    if (message.find("ranks disagree on nranks: rank ") == std::string::npos ||
        message.find(" passed 2") == std::string::npos ||
        message.find(" passed 3") == std::string::npos) {
      return rank_failure(rank, "message: " + last_error());
    }
    return 0;
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_TIMEOUT_MS", "20000"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

class TwoCommunicatorsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TwoCommunicatorsTest, KeepTheirMessagesApart) {
  // Both communicators carry a message with the same peer and tag; each must get its own.
  const std::string provider = GetParam();
  if (provider == "shm" && !shm_available()) GTEST_SKIP() << "shm does not work here";
  const plx_unique_id_t first = loopback_unique_id();
  const plx_unique_id_t second = loopback_unique_id();
  auto outcomes = run_ranks(2, [&](int rank) {
    plx_comm_t a = nullptr, b = nullptr;
    if (plx_comm_init_rank(&a, 2, first, rank) != PLX_SUCCESS ||
        plx_comm_init_rank(&b, 2, second, rank) != PLX_SUCCESS) {
      return rank_failure(rank, "init: " + last_error());
    }
    const int peer = 1 - rank;
    const uint64_t tag = uint64_t{3} << 32;
    int send_a = 100 + rank, send_b = 200 + rank, recv_a = -1, recv_b = -1;
    comm::Request ra, rb, sa, sb;
    comm::Request* all[] = {&rb, &ra, &sb, &sa};
    // Post b's receive first and a's send first, so a mix-up would show.
    if (b->transport->post_recv(peer, tag, &recv_b, sizeof(int), rb) ||
        a->transport->post_recv(peer, tag, &recv_a, sizeof(int), ra) ||
        a->transport->post_send(peer, tag, &send_a, sizeof(int), sa) ||
        b->transport->post_send(peer, tag, &send_b, sizeof(int), sb) ||
        a->transport->wait_all(&all[1], 1) || a->transport->wait_all(&all[3], 1) ||
        b->transport->wait_all(&all[0], 1) || b->transport->wait_all(&all[2], 1)) {
      return rank_failure(rank, "messages: " + last_error());
    }
    if (recv_a != 100 + peer || recv_b != 200 + peer) {
      return rank_failure(rank, "got " + std::to_string(recv_a) + " and " +
                                    std::to_string(recv_b));
    }
    if (plx_comm_destroy(b) != PLX_SUCCESS || plx_comm_destroy(a) != PLX_SUCCESS) {
      return rank_failure(rank, "destroy: " + last_error());
    }
    return 0;
  }, 120, {{"PLEXUS_FI_PROVIDER", provider}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

INSTANTIATE_TEST_SUITE_P(Providers, TwoCommunicatorsTest, ::testing::Values("tcp", "shm"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(Rendezvous, ProviderIsChosenAutomatically) {
  // One host: shm when its self-test passes here, else tcp. Two emulated hosts: tcp (kept on
  // loopback through libfabric's FI_TCP_IFACE).
  const std::string one_host = shm_available() ? "shm" : "tcp;ofi_rxm";
  for (bool two_hosts : {false, true}) {
    const std::string expected = two_hosts ? "tcp;ofi_rxm" : one_host;
    auto outcomes = run_ranks(2, [&](int rank) {
      unsetenv("PLEXUS_FI_PROVIDER");
      if (two_hosts) setenv("PLEXUS_HOST_ID", rank == 0 ? "host-a" : "host-b", 1);
      plx_comm_t comm = nullptr;
      const char* name = nullptr;
      if (plx_comm_init_from_env(&comm) != PLX_SUCCESS ||
          plx_comm_transport_name(comm, &name) != PLX_SUCCESS) {
        return rank_failure(rank, last_error());
      }
      if (name != expected) return rank_failure(rank, std::string("chose ") + name);
      return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error());
    }, 120, {{"FI_TCP_IFACE", "lo"}});
    std::string why;
    EXPECT_TRUE(all_passed(outcomes, &why)) << (two_hosts ? "two hosts: " : "one host: ") << why;
  }
}

TEST(Rendezvous, WorldOfOneFromAnEmptyEnvironment) {
  auto outcomes = run_ranks(1, [](int) {
    for (const char* name : kLauncherVariables) unsetenv(name);
    plx_comm_t comm = nullptr;
    if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
      return rank_failure(0, "plx_comm_init_from_env: " + last_error());
    }
    int rank = -1, size = -1, local_rank = -1, local_size = -1;
    plx_comm_rank(comm, &rank);
    plx_comm_size(comm, &size);
    plx_comm_local_rank(comm, &local_rank);
    plx_comm_local_size(comm, &local_size);
    if (rank != 0 || size != 1 || local_rank != 0 || local_size != 1) {
      return rank_failure(0, "not a world of one");
    }
    return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(0, last_error());
  });
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

}  // namespace
}  // namespace plexus::test
