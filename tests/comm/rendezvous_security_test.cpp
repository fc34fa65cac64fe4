// rendezvous_security_test.cpp - the rendezvous admits only ranks that prove the job's key
// (comm/bootstrap/handshake.h), and nothing a stranger sends can fail, wedge or crash the job or
// cost the server much memory. Strangers here are real processes (forked, through the C ABI) and
// raw sockets writing what a hostile peer would: wrong tokens, no token, a header announcing
// 64 MiB, a HELLO claiming 2^31-1 ranks, random bytes, connections that never speak.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace {

using plexus::test::all_passed;
using plexus::test::free_tcp_port;
using plexus::test::rank_failure;
using plexus::test::run_ranks;

std::string last_error() { return plx_get_last_error(nullptr); }

// Allreduce of (rank + 1) over `comm`, checked; 0 on success.
int allreduce_checked(plx_comm_t comm, int rank, int size) {
  std::vector<float> data(1024, static_cast<float>(rank + 1));
  if (plx_allreduce(data.data(), data.data(), data.size(), PLX_FLOAT32, PLX_SUM, comm,
                    nullptr) != PLX_SUCCESS) {
    return rank_failure(rank, "allreduce: " + last_error());
  }
  const float expected = static_cast<float>(size * (size + 1) / 2);
  for (float v : data) {
    if (v != expected) {
      return rank_failure(rank, "allreduce gave " + std::to_string(v) + ", expected " +
                                    std::to_string(expected));
    }
  }
  return 0;
}

// The rest of a job rank once its communicator call returned `created`: an allreduce, checked,
// and a clean destroy.
int use_and_destroy(int rank, plx_result_t created, plx_comm_t comm, const char* how) {
  if (created != PLX_SUCCESS) return rank_failure(rank, std::string(how) + ": " + last_error());
  if (int failed = allreduce_checked(comm, rank, 2)) return failed;
  return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error());
}

// A two-rank job whose ranks are run_ranks' 0 and 1; a run_ranks rank above 1 is a stranger
// that claims rank 1 of the same address and must be refused.
// Makes this child one of a two-rank job (run_ranks started more children than that).
void two_rank_world() {
  setenv("PLEXUS_WORLD_SIZE", "2", 1);
  unsetenv("PLEXUS_LOCAL_RANK");
  unsetenv("PLEXUS_LOCAL_WORLD_SIZE");
}

int job_or_stranger(int rank, const char* stranger_token) {
  two_rank_world();
  if (rank >= 2) {
    setenv("PLEXUS_RANK", "1", 1);
    if (stranger_token) {
      setenv("PLEXUS_JOB_TOKEN", stranger_token, 1);
    } else {
      unsetenv("PLEXUS_JOB_TOKEN");
    }
    plx_comm_t comm = nullptr;
    const plx_result_t result = plx_comm_init_from_env(&comm);
    if (result != PLX_ERROR_INVALID_ARGUMENT) {
      return rank_failure(rank, "stranger: expected PLX_ERROR_INVALID_ARGUMENT, got " +
                                    std::to_string(result) + ": " + last_error());
    }
    if (last_error().find("belongs to another job") == std::string::npos) {
      return rank_failure(rank, "stranger: message: " + last_error());
    }
    return comm == nullptr ? 0 : rank_failure(rank, "stranger: comm written on failure");
  }
  // Rank 1 arrives late, so the strangers reach the root first.
  if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  plx_comm_t comm = nullptr;
  const plx_result_t created = plx_comm_init_from_env(&comm);
  return use_and_destroy(rank, created, comm, "plx_comm_init_from_env");
}

TEST(RendezvousSecurity, StrangersWithAnotherTokenOrNoneAreRefusedAndTheJobRuns) {
  // run_ranks gives all four the same random token; ranks 2 and 3 replace or drop it.
  auto outcomes = run_ranks(4, [](int rank) {
    return job_or_stranger(rank, rank == 2 ? "another-job-token-0123456789" : nullptr);
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_TIMEOUT_MS", "30000"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(RendezvousSecurity, TwoJobsOnOnePortNeverJoinEachOther) {
  // Both "jobs" were given the same port (a launcher bug, or two users); different tokens, as
  // two plexus-run or two Slurm steps would have. The second job's rank 1 meets the first job's
  // root and is refused at once; the first job completes.
  const std::string port = std::to_string(free_tcp_port());
  auto outcomes = run_ranks(3, [](int rank) {
    return job_or_stranger(rank, "the-second-jobs-token-abcdef");
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_MASTER_PORT", port}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(RendezvousSecurity, LauncherJobIdsKeepJobsApart) {
  // No PLEXUS_JOB_TOKEN: Slurm's job and step id is the key. A rank of another step is refused.
  auto outcomes = run_ranks(3, [](int rank) {
    unsetenv("PLEXUS_JOB_TOKEN");
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", rank == 2 ? "1" : "0", 1);
    two_rank_world();
    if (rank == 2) {
      setenv("PLEXUS_RANK", "1", 1);
      plx_comm_t comm = nullptr;
      if (plx_comm_init_from_env(&comm) != PLX_ERROR_INVALID_ARGUMENT ||
          last_error().find("belongs to another job") == std::string::npos) {
        return rank_failure(rank, "other step: " + last_error());
      }
      return 0;
    }
    if (rank == 1) std::this_thread::sleep_for(std::chrono::milliseconds(500));
    plx_comm_t comm = nullptr;
    const plx_result_t created = plx_comm_init_from_env(&comm);
    return use_and_destroy(rank, created, comm, "plx_comm_init_from_env");
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_TIMEOUT_MS", "30000"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(RendezvousSecurity, AMalformedTokenNamesTheVariable) {
  auto outcomes = run_ranks(1, [](int rank) {
    two_rank_world();
    setenv("PLEXUS_JOB_TOKEN", "short", 1);
    plx_comm_t comm = nullptr;
    if (plx_comm_init_from_env(&comm) != PLX_ERROR_INVALID_ARGUMENT ||
        last_error().find("PLEXUS_JOB_TOKEN is 5 bytes long; it must be 16..1024 bytes") ==
            std::string::npos) {
      return rank_failure(rank, "message: " + last_error());
    }
    return 0;
  });
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(RendezvousSecurity, AJobRestartedAtOnceOnItsPredecessorsPortBindsIt) {
  const std::string port = std::to_string(free_tcp_port());
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto outcomes = run_ranks(2, [](int rank) {
      plx_comm_t comm = nullptr;
      const plx_result_t created = plx_comm_init_from_env(&comm);
      return use_and_destroy(rank, created, comm, "plx_comm_init_from_env");
    }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_MASTER_PORT", port}});
    std::string why;
    ASSERT_TRUE(all_passed(outcomes, &why)) << "run " << attempt << " on port " << port << ": "
                                            << why;
  }
}

// --- Raw sockets against a server running in this process (plx_get_unique_id). ---

int connect_raw(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  timeval timeout{20, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void put_u32(std::vector<uint8_t>* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(value >> (8 * i)));
}

uint32_t get_u32(const uint8_t* in) {
  return in[0] | (in[1] << 8) | (in[2] << 16) | (static_cast<uint32_t>(in[3]) << 24);
}

// Reads until the peer closes or `max` bytes; returns what came.
std::vector<uint8_t> read_all(int fd, size_t max = 1 << 16) {
  std::vector<uint8_t> got;
  uint8_t buffer[4096];
  while (got.size() < max) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    got.insert(got.end(), buffer, buffer + n);
  }
  return got;
}

long rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    long value = 0;
    if (key == "VmRSS:" && status >> value) return value;
  }
  return -1;
}

// A unique id whose server listens on 127.0.0.1:port in this process.
plx_unique_id_t unique_id_on(int port) {
  setenv("PLEXUS_MASTER_ADDR", "127.0.0.1", 1);
  setenv("PLEXUS_MASTER_PORT", std::to_string(port).c_str(), 1);
  plx_unique_id_t id;
  EXPECT_EQ(plx_get_unique_id(&id), PLX_SUCCESS) << last_error();
  unsetenv("PLEXUS_MASTER_ADDR");
  unsetenv("PLEXUS_MASTER_PORT");
  return id;
}

void expect_job_runs(const plx_unique_id_t& id) {
  auto outcomes = run_ranks(2, [&](int rank) {
    plx_comm_t comm = nullptr;
    const plx_result_t created = plx_comm_init_rank(&comm, 2, id, rank);
    return use_and_destroy(rank, created, comm, "plx_comm_init_rank");
  }, 120, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_TIMEOUT_MS", "30000"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(RendezvousSecurity, TheServerChallengesEveryConnectionFirst) {
  const int port = free_tcp_port();
  const plx_unique_id_t id = unique_id_on(port);
  const int fd = connect_raw(port);
  ASSERT_GE(fd, 0);
  uint8_t frame[8 + 4 + 32];
  size_t got = 0;
  while (got < sizeof(frame)) {
    const ssize_t n = read(fd, frame + got, sizeof(frame) - got);
    ASSERT_GT(n, 0) << "the server closed before its CHALLENGE";
    got += static_cast<size_t>(n);
  }
  EXPECT_EQ(get_u32(frame), 9u);       // CHALLENGE
  EXPECT_EQ(get_u32(frame + 4), 36u);  // version + 32-byte nonce
  EXPECT_EQ(get_u32(frame + 8), 3u);   // wire version
  close(fd);
  expect_job_runs(id);
}

TEST(RendezvousSecurity, GarbageConnectionsCostLittleAndChangeNothing) {
  const int port = free_tcp_port();
  const plx_unique_id_t id = unique_id_on(port);
  const long rss_before = rss_kib();
  std::mt19937 random(20261202);
  constexpr int kConnections = 1000;
  constexpr int kBatch = 50;  // open at once, well inside the descriptor limit
  int dropped = 0;
  for (int start = 0; start < kConnections; start += kBatch) {
    std::vector<int> fds;
    for (int i = start; i < start + kBatch; ++i) {
      const int fd = connect_raw(port);
      ASSERT_GE(fd, 0) << "connection " << i << " refused: the listener stopped";
      std::vector<uint8_t> message;
      switch (i % 5) {
        case 0:  // a CONTRIBUTE announcing 64 MiB, before any HELLO
          put_u32(&message, 2);
          put_u32(&message, 64u << 20);
          break;
        case 1: {  // a HELLO claiming 2^31-1 ranks, with a MAC of zeros
          put_u32(&message, 1);
          put_u32(&message, 4 + 4 + 4 + 32 + 32);
          put_u32(&message, 2);
          put_u32(&message, 0);
          put_u32(&message, 0x7fffffff);
          message.resize(message.size() + 64, 0);
          break;
        }
        case 2: {  // a HELLO header announcing 64 MiB
          put_u32(&message, 1);
          put_u32(&message, 64u << 20);
          break;
        }
        case 3:  // random bytes
          for (int b = 0; b < 200; ++b) message.push_back(static_cast<uint8_t>(random()));
          break;
        default:  // nothing at all: closed at once
          break;
      }
      if (!message.empty()) {
        ASSERT_EQ(write(fd, message.data(), message.size()),
                  static_cast<ssize_t>(message.size()));
      }
      fds.push_back(fd);
    }
    for (size_t k = 0; k < fds.size(); ++k) {
      // Cases 0-3 end with the server closing its side (after at most a CHALLENGE and an
      // ERROR) long before our 20 s receive timeout; case 4 is closed by us. Case 3's unread
      // bytes may turn the server's close into a reset that discards the CHALLENGE.
      const int kind = (start + static_cast<int>(k)) % 5;
      if (kind != 4) {
        const auto begin = std::chrono::steady_clock::now();
        const std::vector<uint8_t> reply = read_all(fds[k]);
        EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(15))
            << "connection " << start + k << " (kind " << kind << ") was not closed";
        if (kind != 3) {
          ASSERT_GE(reply.size(), 8u);
          EXPECT_EQ(get_u32(reply.data()), 9u) << "the first message is the CHALLENGE";
        }
        ++dropped;
      }
      close(fds[k]);
    }
  }
  const long rss_after = rss_kib();
  std::printf("%d garbage connections (%d closed by the server): RSS %ld KiB -> %ld KiB\n",
              kConnections, dropped, rss_before, rss_after);
  EXPECT_LT(rss_after - rss_before, 64 * 1024) << "the server kept what strangers announced";
  expect_job_runs(id);  // the same server still admits the job
}

TEST(RendezvousSecurity, IdleConnectionsBeyondTheCapDoNotLockOutTheJob) {
  const int port = free_tcp_port();
  const plx_unique_id_t id = unique_id_on(port);
  std::vector<int> idle;
  for (int i = 0; i < 100; ++i) {  // more than the 64 unadmitted connections the server keeps
    const int fd = connect_raw(port);
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  expect_job_runs(id);
  for (int fd : idle) close(fd);
}

TEST(RendezvousSecurity, AConnectionThatNeverSaysHelloIsClosedWithinItsDeadline) {
  const int port = free_tcp_port();
  const plx_unique_id_t id = unique_id_on(port);
  const int fd = connect_raw(port);
  ASSERT_GE(fd, 0);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<uint8_t> got = read_all(fd);  // the CHALLENGE, then the close
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  close(fd);
  std::printf("a silent connection was closed after %.1f s\n", seconds);
  EXPECT_EQ(got.size(), 8u + 36u) << "only the CHALLENGE comes before the close";
  EXPECT_LT(seconds, 19.0) << "SO_RCVTIMEO (20 s) ran out: the server never closed it";
  expect_job_runs(id);
}

}  // namespace
