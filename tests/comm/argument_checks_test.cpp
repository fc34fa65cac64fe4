// Arguments that only look valid: partly overlapping buffers, ranks whose transport settings or
// hierarchical lane schedule disagree (they would slice messages differently, so nothing would
// match), and settings malformed on one rank.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdlib>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;

TEST(ArgumentChecks, PartlyOverlappingBuffersAreRefusedAndNothingIsWritten) {
  const std::vector<RankOutcome> outcomes = run_ranks(1, [](int rank) {
    plx_comm_t comm = nullptr;
    if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) return rank_failure(rank, "init failed");
    std::vector<float> buffer(16);
    for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<float>(i);
    const std::vector<float> before = buffer;
    if (plx_allreduce(buffer.data(), buffer.data() + 1, 10, PLX_FLOAT32, PLX_SUM, comm, nullptr) !=
        PLX_ERROR_INVALID_ARGUMENT) {
      return rank_failure(rank, "overlapping allreduce was accepted");
    }
    const std::string message = plx_get_last_error(comm);
    if (message.find("plx_allreduce: rank 0: sendbuf") != 0 ||
        message.find("overlap") == std::string::npos) {
      return rank_failure(rank, "unexpected message: " + message);
    }
    if (buffer != before) return rank_failure(rank, "a refused call wrote its output");
    if (plx_broadcast(buffer.data() + 4, buffer.data(), 8, PLX_FLOAT32, 0, comm, nullptr) !=
        PLX_ERROR_INVALID_ARGUMENT) {
      return rank_failure(rank, "overlapping broadcast on the root was accepted");
    }
    // Adjacent (touching) buffers and in place stay valid.
    if (plx_allreduce(buffer.data(), buffer.data() + 8, 8, PLX_FLOAT32, PLX_SUM, comm, nullptr) !=
            PLX_SUCCESS ||
        buffer[8] != 0.0f || buffer[15] != 7.0f) {
      return rank_failure(rank, "adjacent buffers failed: " + std::string(plx_get_last_error(comm)));
    }
    if (plx_allreduce(buffer.data(), buffer.data(), 16, PLX_FLOAT32, PLX_SUM, comm, nullptr) !=
        PLX_SUCCESS) {
      return rank_failure(rank, "in place failed");
    }
    return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, "destroy failed");
  });
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Two ranks, each running `setup` before it creates the communicator: creation must fail on
// rank r with want[r], a message holding every string of `expected`, and no communicator
// written.
void expect_creation_refused(void (*setup)(int rank), std::array<plx_result_t, 2> want,
                             std::vector<std::string> expected) {
  const std::vector<RankOutcome> outcomes = run_ranks(
      2,
      [setup, want, expected](int rank) {
        setup(rank);
        plx_comm_t comm = nullptr;
        const plx_result_t r = plx_comm_init_from_env(&comm);
        if (r != want[static_cast<size_t>(rank)]) {
          return rank_failure(rank, std::string("init returned ") + plx_get_error_string(r));
        }
        const std::string message = plx_get_last_error(nullptr);
        for (const std::string& part : expected) {
          if (message.find(part) == std::string::npos) {
            return rank_failure(rank, "message lacks '" + part + "': " + message);
          }
        }
        return comm == nullptr ? 0 : rank_failure(rank, "comm written on failure");
      },
      60.0);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Two ranks whose environments differ by `setup` must both fail creation with
// PLX_ERROR_INVALID_USAGE, a message naming the transport settings and every string of
// `expected`.
void expect_settings_refused(void (*setup)(int rank), std::vector<std::string> expected) {
  expected.push_back("disagree on transport settings");
  expect_creation_refused(setup, {PLX_ERROR_INVALID_USAGE, PLX_ERROR_INVALID_USAGE}, expected);
}

// Rank 1's environment holds a setting that fails creation there with `bad_rank`, before any
// endpoint opens; rank 0 hears of it from the rendezvous (PLX_ERROR_REMOTE), with the same text.
void expect_one_rank_refused(void (*setup)(int rank), plx_result_t bad_rank,
                             std::vector<std::string> expected) {
  expect_creation_refused(setup, {PLX_ERROR_REMOTE, bad_rank}, expected);
}

TEST(ArgumentChecks, RanksWithDifferentChunkSizesFailAtCreationNamingTheSetting) {
  expect_settings_refused(
      [](int rank) { setenv("PLEXUS_CHUNK_BYTES", rank == 0 ? "4096" : "65536", 1); },
      {"chunk_bytes=4096", "chunk_bytes=65536"});
}

// The hierarchical allreduce's lane schedule sets its plan (segments, steps), so ranks where
// PLEXUS_HIERARCHICAL_LANES differs would run different plans, even where "auto" would halve
// too (it may take another step): refused at creation.
TEST(ArgumentChecks, RanksWithDifferentLaneSchedulesFailAtCreationNamingTheSetting) {
  expect_settings_refused(
      [](int rank) { setenv("PLEXUS_HIERARCHICAL_LANES", rank == 0 ? "halving" : "auto", 1); },
      {"hierarchical_lanes=halving", "hierarchical_lanes=auto", "PLEXUS_HIERARCHICAL_LANES"});
}

// A value that is no schedule fails creation on the rank that has it, naming the variable and
// the rank.
TEST(ArgumentChecks, AnUnknownLaneScheduleFailsCreationNamingIt) {
  expect_one_rank_refused(
      [](int rank) {
        if (rank == 1) setenv("PLEXUS_HIERARCHICAL_LANES", "tree", 1);
      },
      PLX_ERROR_INVALID_ARGUMENT,
      {"PLEXUS_HIERARCHICAL_LANES=\"tree\": rank 1: not one of auto, ring, halving"});
}

// The eager limit sets the hierarchical allreduce's segments (hierarchical_segments.h), so ranks
// that read different FI_OFI_RXM_BUFFER_SIZE values would cut the vector differently: refused
// at creation like the chunk size (tcp opens tcp;ofi_rxm on Debian 12's libfabric).
TEST(ArgumentChecks, RanksWithDifferentRxmBufferSizesFailAtCreationNamingTheSetting) {
  expect_settings_refused(
      [](int rank) {
        setenv("PLEXUS_FI_PROVIDER", "tcp", 1);
        setenv("FI_TCP_IFACE", "lo", 1);
        setenv("FI_OFI_RXM_BUFFER_SIZE", rank == 0 ? "16384" : "32768", 1);
      },
      {"eager_bytes=16256", "eager_bytes=32640", "FI_OFI_RXM_BUFFER_SIZE"});
}

// An rxm buffer size that would stall set-up (rxm's receive pools at 16 MiB buffers took GBs and
// never finished) fails on the rank that has it, naming the variable, before any endpoint
// opens; the other rank hears of it from the rendezvous, within seconds, with the same text.
TEST(ArgumentChecks, AnRxmBufferSizeAboveOneMebibyteFailsCreationNamingIt) {
  expect_one_rank_refused(
      [](int rank) {
        setenv("PLEXUS_FI_PROVIDER", "tcp", 1);
        setenv("FI_TCP_IFACE", "lo", 1);
        if (rank == 1) setenv("FI_OFI_RXM_BUFFER_SIZE", "16777216", 1);
      },
      PLX_ERROR_INVALID_USAGE,
      {"rank 1: FI_OFI_RXM_BUFFER_SIZE='16777216' is too large", "give at most 1048576"});
}

}  // namespace
}  // namespace plexus::test
