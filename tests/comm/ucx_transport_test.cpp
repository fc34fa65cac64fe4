// ucx_transport_test.cpp - point-to-point messages through UcxTransport between real processes,
// and the ways a wait on it must end: a timeout, an abort, news of a lost peer, a dead peer.
//
// Each case forks `n` ranks; each opens its own UcxTransport (loopback only) and the ranks swap
// worker addresses through files in a fresh temporary directory (each rank writes its own, then
// polls, time-bounded, for the others'). Messages (tests/comm/point_to_point_checks.h): 0 bytes,
// 1 byte, 5 bytes into a larger buffer and 7 MiB to every rank (itself included) with receives
// posted in the reverse order of the sends; 200 tags to the right neighbour received in a
// shuffled order; a receive completed by polling test(). Every byte is checked against a
// closed-form pattern; a failure names rank, peer and index.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/base/async_state.h"
#include "comm/transport/ucx/ucx_transport.h"
#include "plexus/plexus.h"
#include "tests/comm/point_to_point_checks.h"
#include "tests/support/multiprocess.h"
#include "tests/support/temp_dir.h"

namespace plexus::test {
namespace {

namespace fs = std::filesystem;
using comm::AsyncState;
using comm::Request;
using comm::Transport;
using comm::ucx::UcxTransport;
using Clock = std::chrono::steady_clock;

constexpr auto kFileWait = std::chrono::seconds(60);

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Writes `bytes` to dir/name atomically (a temporary name, then rename).
bool write_file(const std::string& dir, const std::string& name,
                const std::vector<uint8_t>& bytes) {
  const std::string temporary = dir + "/." + name + ".tmp";
  {
    std::ofstream out(temporary, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) return false;
  }
  return std::rename(temporary.c_str(), (dir + "/" + name).c_str()) == 0;
}

// Waits (bounded) for dir/name to exist and reads it.
bool read_file(const std::string& dir, const std::string& name, std::vector<uint8_t>* bytes) {
  const std::string path = dir + "/" + name;
  const auto deadline = Clock::now() + kFileWait;
  while (!fs::exists(path)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::ifstream in(path, std::ios::binary);
  bytes->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// Every rank writes "<stage>.<rank>" and waits for everyone's.
bool file_barrier(const std::string& dir, const std::string& stage, int rank, int n) {
  if (!write_file(dir, stage + "." + std::to_string(rank), {1})) return false;
  std::vector<uint8_t> ignored;
  for (int r = 0; r < n; ++r) {
    if (!read_file(dir, stage + "." + std::to_string(r), &ignored)) return false;
  }
  return true;
}

// Opens this rank's transport and connects it to every rank through address files in `dir`.
// Returns 0 or a rank_failure code.
int open_connected(const std::string& dir, int rank, int n, int timeout_ms,
                   std::shared_ptr<AsyncState> async, std::unique_ptr<UcxTransport>* out) {
  std::unique_ptr<UcxTransport> t;
  if (UcxTransport::open(rank, n, timeout_ms, std::move(async), &t, /*loopback_only=*/true) !=
      PLX_SUCCESS) {
    return rank_failure(rank, "UcxTransport::open: " + last_error());
  }
  if (!write_file(dir, "address." + std::to_string(rank), t->local_address())) {
    return rank_failure(rank, "cannot write the address file in " + dir);
  }
  std::vector<std::vector<uint8_t>> addresses(n);
  for (int r = 0; r < n; ++r) {
    if (!read_file(dir, "address." + std::to_string(r), &addresses[r])) {
      return rank_failure(rank, "no address file from rank " + std::to_string(r));
    }
  }
  if (t->connect(addresses) != PLX_SUCCESS) return rank_failure(rank, "connect: " + last_error());
  if (t->rank() != rank || t->size() != n) return rank_failure(rank, "transport rank/size wrong");
  if (std::string(t->name()).rfind("ucx", 0) != 0) {
    return rank_failure(rank, std::string("name() is ") + t->name() + ", expected ucx...");
  }
  *out = std::move(t);
  return 0;
}

// Rank 0's receive of 16 bytes from rank 1, which no send will match.
int post_unmatched_recv(Transport& t, std::vector<uint8_t>* inbox, Request* recv) {
  inbox->assign(16, 0);
  if (t.post_recv(1, kTagBase, inbox->data(), inbox->size(), *recv) != PLX_SUCCESS) {
    return rank_failure(0, "post_recv: " + last_error());
  }
  return 0;
}

// Runs body(rank, dir) in n processes sharing a fresh address directory; expects all to pass.
void expect_ranks_pass(int n, const std::function<int(int rank, const std::string& dir)>& body) {
  TempDir dir("plexus-ucx-test");
  ASSERT_FALSE(dir.path().empty()) << "mkdtemp failed";
  const std::string path = dir.path();
  const auto outcomes = run_ranks(
      n, [&](int rank) { return body(rank, path); }, 240);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

class UcxMessagesTest : public ::testing::TestWithParam<int> {};

TEST_P(UcxMessagesTest, PointToPointMessagesArriveIntact) {
  const int n = GetParam();
  expect_ranks_pass(n, [n](int rank, const std::string& dir) {
    std::unique_ptr<UcxTransport> t;
    if (int failed = open_connected(dir, rank, n, 60000, std::make_shared<AsyncState>(), &t)) {
      return failed;
    }
    if (int failed = point_to_point_checks(*t, rank, n)) return failed;
    // Nobody closes while a peer may still need its endpoint.
    if (!file_barrier(dir, "done", rank, n)) return rank_failure(rank, "barrier: no end");
    t.reset();
    return 0;
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, UcxMessagesTest, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::to_string(info.param) + "ranks";
                         });

// Bad arguments get an error naming the rank, the argument, its value and the valid range; they
// do not break the transport. A message longer than its receive buffer does (sticky).
TEST(UcxTransportTest, RejectsBadArgumentsAndTruncation) {
  expect_ranks_pass(1, [](int rank, const std::string& dir) {
    auto async = std::make_shared<AsyncState>();
    std::unique_ptr<UcxTransport> t;
    if (UcxTransport::open(0, (1 << 19) + 1, 1000, async, &t) != PLX_ERROR_INVALID_ARGUMENT ||
        !contains(last_error(), "size 524289 not in 1..524288")) {
      return rank_failure(rank, "2^19+1 ranks: " + last_error());
    }
    if (UcxTransport::open(2, 2, 1000, async, &t) != PLX_ERROR_INVALID_ARGUMENT ||
        !contains(last_error(), "rank 2 not in 0..1")) {
      return rank_failure(rank, "rank 2 of 2: " + last_error());
    }
    if (UcxTransport::open(0, 1, 1000, async, &t, true) != PLX_SUCCESS) {
      return rank_failure(rank, "open: " + last_error());
    }
    unsigned char small[4] = {};
    Request req;
    if (t->post_recv(0, 1, small, sizeof(small), req) != PLX_ERROR_INTERNAL ||
        !contains(last_error(), "post_recv before connect")) {
      return rank_failure(rank, "post before connect: " + last_error());
    }
    t.reset();
    if (int failed = open_connected(dir, rank, 1, 1000, async, &t)) return failed;
    if (t->post_send(1, 1, small, sizeof(small), req) != PLX_ERROR_INVALID_ARGUMENT ||
        !contains(last_error(), "rank 0: post_send: peer 1 not in 0..0")) {
      return rank_failure(rank, "peer 1: " + last_error());
    }
    if (t->post_recv(0, uint64_t{1} << 45, small, sizeof(small), req) != PLX_ERROR_INTERNAL ||
        !contains(last_error(), "uses bits 45..63")) {
      return rank_failure(rank, "tag bit 45: " + last_error());
    }
    // Still healthy: a message to itself.
    unsigned char word[4] = {1, 2, 3, 4};
    Request recv, send;
    Request* both[] = {&recv, &send};
    if (t->post_recv(0, 2, small, sizeof(small), recv) != PLX_SUCCESS ||
        t->post_send(0, 2, word, sizeof(word), send) != PLX_SUCCESS ||
        t->wait_all(both, 2) != PLX_SUCCESS || small[3] != 4) {
      return rank_failure(rank, "message to itself after bad arguments: " + last_error());
    }
    // 64 bytes into a 4-byte buffer: the transport fails, and stays failed.
    std::vector<unsigned char> long_message(64, 9);
    Request recv2, send2;
    Request* both2[] = {&recv2, &send2};
    plx_result_t result = t->post_recv(0, 3, small, sizeof(small), recv2);
    if (result == PLX_SUCCESS) result = t->post_send(0, 3, long_message.data(), 64, send2);
    if (result == PLX_SUCCESS) result = t->wait_all(both2, 2);
    if (result != PLX_ERROR_TRANSPORT || !contains(last_error(), "rank 0: receive from rank 0") ||
        !contains(last_error(), "longer than the 4-byte buffer")) {
      return rank_failure(
          rank, "truncated message: result " + std::to_string(result) + ": " + last_error());
    }
    const std::string first = last_error();
    if (t->post_send(0, 4, word, sizeof(word), send) != PLX_ERROR_TRANSPORT ||
        last_error() != first) {
      return rank_failure(rank, "not sticky after truncation: " + last_error());
    }
    return 0;
  });
}

// A receive from a peer that never sends ends in PLX_ERROR_TIMEOUT naming both ranks, and the
// failure is sticky.
TEST(UcxTransportTest, TimesOutWhenAPeerNeverSends) {
  expect_ranks_pass(2, [](int rank, const std::string& dir) {
    std::unique_ptr<UcxTransport> t;
    if (int failed = open_connected(dir, rank, 2, 300, std::make_shared<AsyncState>(), &t)) {
      return failed;
    }
    if (rank == 0) {
      std::vector<uint8_t> inbox;
      Request recv;
      Request* reqs[] = {&recv};
      if (int failed = post_unmatched_recv(*t, &inbox, &recv)) return failed;
      if (t->wait_all(reqs, 1) != PLX_ERROR_TIMEOUT) {
        return rank_failure(rank, "wait_all did not time out: " + last_error());
      }
      const std::string message = last_error();
      if (!contains(message, "rank 0:") || !contains(message, "with rank 1") ||
          !contains(message, "PLEXUS_TIMEOUT_MS=300")) {
        return rank_failure(rank, "timeout message: " + message);
      }
      Request send;
      if (t->post_send(1, kTagBase, inbox.data(), 1, send) != PLX_ERROR_TIMEOUT ||
          last_error() != message) {
        return rank_failure(rank, "not sticky after the timeout: " + last_error());
      }
    }
    if (!file_barrier(dir, "done", rank, 2)) return rank_failure(rank, "barrier: no end");
    return 0;
  });
}

// Another thread raises the abort flag (as plx_comm_abort does) or records a lost peer (as the
// liveness watcher does) while rank 0 waits for a message that never comes: the wait ends with
// PLX_ERROR_ABORTED or with the liveness error and its message.
int wait_until_told(int rank, const std::string& dir, bool abort) {
  auto async = std::make_shared<AsyncState>();
  std::unique_ptr<UcxTransport> t;
  if (int failed = open_connected(dir, rank, 2, 60000, async, &t)) return failed;
  if (rank == 0) {
    std::vector<uint8_t> inbox;
    Request recv;
    Request* reqs[] = {&recv};
    if (int failed = post_unmatched_recv(*t, &inbox, &recv)) return failed;
    std::thread teller([async, abort] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      if (abort) {
        async->request_abort();
      } else {
        async->record_error(PLX_ERROR_REMOTE, "rank 1 stopped answering (test)");
      }
    });
    const plx_result_t result = t->wait_all(reqs, 1);
    teller.join();
    const std::string message = last_error();
    const std::string waiting =
        "rank 0: waiting for 1 of 1 requests (first: with rank 1, 16 bytes): ";
    if (abort && (result != PLX_ERROR_ABORTED ||
                  message != waiting + "the communicator was aborted (plx_comm_abort)")) {
      return rank_failure(rank, "abort: result " + std::to_string(result) + ": " + message);
    }
    if (!abort &&
        (result != PLX_ERROR_REMOTE || message != waiting + "rank 1 stopped answering (test)")) {
      return rank_failure(rank, "lost peer: result " + std::to_string(result) + ": " + message);
    }
  }
  if (!file_barrier(dir, "done", rank, 2)) return rank_failure(rank, "barrier: no end");
  return 0;
}

TEST(UcxTransportTest, AbortEndsAWait) {
  expect_ranks_pass(2, [](int rank, const std::string& dir) {
    return wait_until_told(rank, dir, /*abort=*/true);
  });
}

TEST(UcxTransportTest, LivenessNewsEndsAWait) {
  expect_ranks_pass(2, [](int rank, const std::string& dir) {
    return wait_until_told(rank, dir, /*abort=*/false);
  });
}

// Rank 1 exits without closing anything after one exchange; rank 0, waiting on it, gets
// PLX_ERROR_REMOTE naming rank 1 from the endpoint's error handler, long before its timeout.
TEST(UcxTransportTest, DeadPeerFailsTheWait) {
  expect_ranks_pass(2, [](int rank, const std::string& dir) {
    std::unique_ptr<UcxTransport> t;
    if (int failed = open_connected(dir, rank, 2, 30000, std::make_shared<AsyncState>(), &t)) {
      return failed;
    }
    if (int failed = poll_with_test(*t, rank, 2)) return failed;  // the connection is up
    if (rank == 1) {
      std::vector<uint8_t> ignored;
      if (!read_file(dir, "go", &ignored)) return rank_failure(rank, "no go from rank 0");
      (void)t.release();  // dies as a crash would: no close, no goodbye
      return 0;
    }
    if (!write_file(dir, "go", {1})) return rank_failure(rank, "cannot write the go file");
    std::vector<uint8_t> inbox;
    Request recv;
    Request* reqs[] = {&recv};
    if (int failed = post_unmatched_recv(*t, &inbox, &recv)) return failed;
    const plx_result_t result = t->wait_all(reqs, 1);
    const std::string message = last_error();
    if (result != PLX_ERROR_REMOTE || !contains(message, "rank 0:") ||
        !contains(message, "rank 1")) {
      return rank_failure(rank, "dead peer: result " + std::to_string(result) + ": " + message);
    }
    return 0;
  });
}

}  // namespace
}  // namespace plexus::test
