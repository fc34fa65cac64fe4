// inherited_listener_test.cpp - rank 0's rendezvous serves a listening socket its launcher opened
// and passed down as PLEXUS_RENDEZVOUS_FD (comm/bootstrap/inherited_listener.h), so no other
// process can take the port between the launcher's choice and rank 0's start. Real ranks (forked
// through multiprocess.h), the real rendezvous and libfabric's tcp provider; the listener is
// opened here, in the test process, as plexus-run opens it.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace {

using plexus::test::all_passed;
using plexus::test::EnvList;
using plexus::test::rank_failure;
using plexus::test::run_ranks;

std::string last_error() { return plx_get_last_error(nullptr); }

// A TCP socket listening on 127.0.0.1 at a port the kernel picks; *port is that port.
int listen_on_loopback(int* port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(sa);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 ||
      listen(fd, SOMAXCONN) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  *port = ntohs(sa.sin_port);
  return fd;
}

// A two-rank job: an allreduce of (rank + 1) checked, then a clean destroy; 0 on success.
int two_rank_allreduce(int rank) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, "plx_comm_init_from_env: " + last_error());
  }
  std::vector<float> data(4096, static_cast<float>(rank + 1));
  if (plx_allreduce(data.data(), data.data(), data.size(), PLX_FLOAT32, PLX_SUM, comm,
                    nullptr) != PLX_SUCCESS) {
    return rank_failure(rank, "allreduce: " + last_error());
  }
  for (float v : data) {
    if (v != 3.0f) return rank_failure(rank, "allreduce gave " + std::to_string(v) + ", not 3");
  }
  return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, last_error());
}

// Rank 0 of a two-rank job whose communicator creation must fail with PLX_ERROR_SYSTEM and a
// message containing `expected`; 0 when it does. Run alone (run_ranks(1, ...)), it never waits
// for rank 1: the rendezvous server fails to start first.
int rank_zero_cannot_listen(int rank, const std::string& expected) {
  setenv("PLEXUS_WORLD_SIZE", "2", 1);
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_ERROR_SYSTEM ||
      last_error().find(expected) == std::string::npos) {
    return rank_failure(rank, "expected '" + expected + "', got: " + last_error());
  }
  return 0;
}

// Inherited descriptors survive fork; the children are run_ranks' own (no exec), so a
// descriptor opened close-on-exec here is still theirs. port 0: run_ranks' own fresh port.
EnvList job_env(int port, const std::string& descriptor) {
  EnvList env = {{"PLEXUS_FI_PROVIDER", "tcp"},
                 {"PLEXUS_TIMEOUT_MS", "20000"},
                 {"PLEXUS_RENDEZVOUS_FD", descriptor}};
  if (port != 0) env.emplace_back("PLEXUS_MASTER_PORT", std::to_string(port));
  return env;
}

TEST(InheritedListener, RankZeroServesTheLaunchersListenerWhileThePortIsHeld) {
  int port = 0;
  const int listener = listen_on_loopback(&port);
  ASSERT_GE(listener, 0);
  // The control: the port is held (by this process), so binding it, as rank 0 did before the
  // hand-off, fails and says why.
  auto refused = run_ranks(1, [](int rank) {
    unsetenv("PLEXUS_RENDEZVOUS_FD");
    return rank_zero_cannot_listen(rank, "Address already in use");
  }, 60, job_env(port, ""));
  std::string why;
  EXPECT_TRUE(all_passed(refused, &why)) << why;

  auto outcomes = run_ranks(2, two_rank_allreduce, 120, job_env(port, std::to_string(listener)));
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
  close(listener);
}

TEST(InheritedListener, AValueThatIsNotTheListenerIsIgnoredAndThePortBound) {
  // A malformed value, a pipe, a listener on another port (a variable copied into a process
  // that never got the descriptor, say): rank 0 warns and binds its port itself (run_ranks'
  // fresh one); the job runs.
  int pipe_fds[2];
  ASSERT_EQ(pipe2(pipe_fds, O_CLOEXEC), 0);
  int other_port = 0;
  const int other = listen_on_loopback(&other_port);
  ASSERT_GE(other, 0);
  for (const std::string& value : {std::string("3x"), std::string("2"),
                                  std::to_string(pipe_fds[0]), std::to_string(other)}) {
    auto outcomes = run_ranks(2, two_rank_allreduce, 120, job_env(0, value));
    std::string why;
    EXPECT_TRUE(all_passed(outcomes, &why)) << "PLEXUS_RENDEZVOUS_FD=" << value << ": " << why;
  }
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  close(other);
}

TEST(InheritedListener, APortHeldByAnUnusableListenerNamesTheLauncher) {
  // A wrapper that closed the descriptor before starting rank 0 leaves the port held by the
  // launcher's listener: rank 0's own bind fails, and says where the port went.
  int port = 0;
  const int listener = listen_on_loopback(&port);
  ASSERT_GE(listener, 0);
  auto outcomes = run_ranks(1, [](int rank) {
    return rank_zero_cannot_listen(
        rank, "Address already in use (the launcher's listener, PLEXUS_RENDEZVOUS_FD, may hold it");
  }, 60, job_env(port, "999"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
  close(listener);
}

}  // namespace
