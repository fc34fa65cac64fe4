// ofi_efa_readiness_test.cpp - what the libfabric transport does for an EFA fabric that can be
// checked without one (comm/transport/ofi/ofi_util.h, provider_select.h).
//
//   API version     the library's own from 1.18, 1.17 below; plx_get_libfabric_version says
//                   both.
//   Environment     loading libplexus and plx_comm_init leave FI_PROVIDER as they found it,
//                   unset or set (a co-resident NCCL with aws-ofi-nccl reads it).
//   FI_HMEM         with a provider that refuses it (tcp;ofi_rxm of libfabric 1.17),
//                   PLEXUS_FI_HMEM=2 fails naming the refusal, the default opens the provider;
//                   the WARN of a refusal is logged once, where GPUDirect RDMA was expected.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "comm/transport/ofi/ofi_util.h"
#include "comm/transport/ofi/provider_select.h"
#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using comm::ofi::requested_api_version;

TEST(OfiApiVersion, TheLibrarysOwnFrom118Else117) {
  EXPECT_EQ(requested_api_version(FI_VERSION(1, 17)), FI_VERSION(1, 17));
  EXPECT_EQ(requested_api_version(FI_VERSION(1, 18)), FI_VERSION(1, 18));
  EXPECT_EQ(requested_api_version(FI_VERSION(1, 22)), FI_VERSION(1, 22));
  EXPECT_EQ(requested_api_version(FI_VERSION(2, 0)), FI_VERSION(2, 0));
  EXPECT_EQ(requested_api_version(FI_VERSION(1, 16)), FI_VERSION(1, 17));
}

TEST(OfiApiVersion, TheCAbiReportsWhatIsAskedFor) {
  unsigned library = 0, api = 0;
  ASSERT_EQ(plx_get_libfabric_version(&library, &api), PLX_SUCCESS);
  EXPECT_EQ(library, fi_version());
  EXPECT_EQ(api, requested_api_version(fi_version()));
  EXPECT_EQ(api, comm::ofi::api_version());
  EXPECT_GE(api, FI_VERSION(1, 17));
  EXPECT_EQ(plx_get_libfabric_version(nullptr, nullptr), PLX_SUCCESS);
}

// Two ranks over tcp and shm each check FI_PROVIDER after plx_comm_init_from_env and a collective.
int provider_env_rank(int rank, const char* expected) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, std::string("plx_comm_init_from_env: ") + plx_get_last_error(nullptr));
  }
  float value = 1.0f;
  if (plx_allreduce(&value, &value, 1, PLX_FLOAT32, PLX_SUM, comm, nullptr) != PLX_SUCCESS ||
      value != 2.0f) {
    return rank_failure(rank, "allreduce");
  }
  const char* now = std::getenv("FI_PROVIDER");
  const std::string seen = now == nullptr ? "(unset)" : now;
  const std::string want = expected == nullptr ? "(unset)" : expected;
  plx_comm_destroy(comm);
  return seen == want ? 0 : rank_failure(rank, "FI_PROVIDER is " + seen + ", was " + want);
}

// A variable as the process's environment had it at exec (/proc/self/environ, which setenv
// does not change), or nullopt when it was not there.
std::optional<std::string> environment_at_exec(const std::string& name) {
  std::ifstream in("/proc/self/environ", std::ios::binary);
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    if (entry.compare(0, name.size() + 1, name + "=") == 0) return entry.substr(name.size() + 1);
  }
  return std::nullopt;
}

TEST(OfiEnvironment, LoadingLibplexusLeavesFiProviderAsItWas) {
  // libplexus was loaded (and its constructors ran) before main.
  const char* now = std::getenv("FI_PROVIDER");
  const std::optional<std::string> at_exec = environment_at_exec("FI_PROVIDER");
  EXPECT_EQ(now != nullptr, at_exec.has_value()) << "FI_PROVIDER=" << (now ? now : "(unset)");
  if (now != nullptr && at_exec) {
    EXPECT_EQ(std::string(now), *at_exec);
  }
}

TEST(OfiEnvironment, CommInitLeavesFiProviderAsItWas) {
  for (const char* provider : {"tcp", ""}) {
    EnvList env = {{"PLEXUS_TIMEOUT_MS", "30000"}};
    if (*provider != '\0') env.push_back({"PLEXUS_FI_PROVIDER", provider});
    // The children are forked: they inherit this process's environment plus env.
    unsetenv("FI_PROVIDER");
    auto unset = run_ranks(2, [](int rank) { return provider_env_rank(rank, nullptr); }, 120, env);
    std::string why;
    EXPECT_TRUE(all_passed(unset, &why)) << "provider '" << provider << "': " << why;

    EnvList with = env;
    with.push_back({"FI_PROVIDER", "tcp,shm,udp"});
    auto set = run_ranks(2, [](int rank) { return provider_env_rank(rank, "tcp,shm,udp"); }, 120,
                         with);
    EXPECT_TRUE(all_passed(set, &why)) << "provider '" << provider << "': " << why;
  }
}

// tcp;ofi_rxm of libfabric 1.17 offers no FI_HMEM entry (fi_getinfo answers -FI_ENODATA). Every
// rank reports the refusal itself, with the same code (not one the refusal and the other its
// loss).
TEST(OfiHmemDemand, PlexusFiHmemTwoFailsWhereTheProviderRefusesIt) {
  const EnvList env = {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_FI_HMEM", "2"},
                       {"PLEXUS_TIMEOUT_MS", "30000"}};
  auto outcomes = run_ranks(
      2,
      [](int rank) {
        plx_comm_t comm = nullptr;
        const plx_result_t rc = plx_comm_init_from_env(&comm);
        const std::string message = plx_get_last_error(nullptr);
        if (rc == PLX_SUCCESS) {
          plx_comm_destroy(comm);
          return 77;  // this libfabric's tcp grants FI_HMEM: nothing to refuse
        }
        const std::string demand =
            "rank " + std::to_string(rank) + ": PLEXUS_FI_HMEM=2 demands FI_HMEM";
        const bool named = rc == PLX_ERROR_UNSUPPORTED &&
                           message.find(demand) != std::string::npos &&
                           message.find("refused: fi_getinfo with FI_HMEM: provider "
                                        "tcp;ofi_rxm offers no such entry") != std::string::npos;
        if (!named) {
          return rank_failure(rank, std::string(plx_get_error_string(rc)) + " \"" + message + "\"");
        }
        return comm == nullptr ? 0 : rank_failure(rank, "comm written on failure");
      },
      60, env);
  ASSERT_EQ(outcomes.size(), 2u);
  if (outcomes[0].exit_code == 77) GTEST_SKIP() << "tcp;ofi_rxm grants FI_HMEM here";
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(OfiHmemDemand, TheDefaultOpensAProviderThatRefusesIt) {
  const EnvList env = {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_TIMEOUT_MS", "30000"}};
  auto outcomes = run_ranks(
      2,
      [](int rank) {
        plx_comm_t comm = nullptr;
        if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
          return rank_failure(rank, plx_get_last_error(nullptr));
        }
        const char* name = nullptr;
        plx_comm_transport_name(comm, &name);
        const std::string provider = name != nullptr ? name : "";
        plx_comm_destroy(comm);
        return provider == "tcp;ofi_rxm" ? 0 : rank_failure(rank, "provider " + provider);
      },
      120, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(OfiHmemDemand, ARefusalIsAWarningOnceWhereGpuDirectWasExpected) {
  testing::internal::CaptureStderr();
  // A CPU job on tcp loses nothing: no warning, and the one warning is still to come.
  EXPECT_FALSE(comm::ofi::report_hmem_refused("tcp;ofi_rxm", false, "no FI_HMEM entry"));
  EXPECT_TRUE(comm::ofi::report_hmem_refused("efa", false, "FI_OPT_CUDA_API_PERMITTED refused"));
  EXPECT_FALSE(comm::ofi::report_hmem_refused("efa", true, "again"));
  EXPECT_FALSE(comm::ofi::report_hmem_refused("tcp;ofi_rxm", true, "and again"));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("provider efa: no GPUDirect RDMA (FI_OPT_CUDA_API_PERMITTED refused)"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("again"), std::string::npos) << log;
}

}  // namespace
}  // namespace plexus::test
