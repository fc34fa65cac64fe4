// peer_memory.cpp - see peer_memory.h.
#include "comm/transport/peer_memory/peer_memory.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "comm/core/async_state.h"
#include "comm/core/error.h"
#include "comm/core/log.h"

namespace plexus::comm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kNameBytes = 128;      // the create message: status byte, then the name
constexpr int kSleepUs = 2000;          // one futex sleep; checks run between sleeps
constexpr int kSpins = 200;             // polls before the first sleep (a few microseconds)
constexpr auto kPidCheckEvery = std::chrono::milliseconds(50);

plx_result_t exchange(Transport& transport, bool send, int peer, uint64_t tag, void* buf,
                      size_t bytes) {
  Request req;
  PLX_CHECK(send ? transport.post_send(peer, tag, buf, bytes, req)
                 : transport.post_recv(peer, tag, buf, bytes, req));
  Request* reqs[] = {&req};
  return transport.wait_all(reqs, 1);
}

uint64_t pid_namespace() {
  struct stat info {};
  return ::stat("/proc/self/ns/pid", &info) == 0 ? static_cast<uint64_t>(info.st_ino) : 0;
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

PeerMemory::PeerMemory(int rank, int size, int timeout_ms, std::shared_ptr<AsyncState> async)
    : rank_(rank), size_(size), timeout_ms_(timeout_ms), async_(std::move(async)) {}

PeerMemory::~PeerMemory() = default;

plx_result_t PeerMemory::open(Transport& transport, uint64_t tag_base, bool wanted,
                              size_t slot_bytes, int timeout_ms, std::shared_ptr<AsyncState> async,
                              std::unique_ptr<PeerMemory>* out) {
  const int rank = transport.rank(), n = transport.size();
  slot_bytes = std::clamp<size_t>((std::min(slot_bytes, kMaxSlotBytes) + 4095) / 4096 * 4096,
                                  4096, kMaxSlotBytes);
  std::unique_ptr<PeerMemory> memory(new PeerMemory(rank, n, timeout_ms, std::move(async)));
  std::string why;
  unsigned char ok = 1;
  if (rank == 0) {
    // 1. Create, and send the name to every rank (status 0: creation failed).
    std::string name;
    std::vector<unsigned char> message(kNameBytes, 0);
    if (!wanted) {
      why = "PLEXUS_SHM=0";
    } else if (memory->segment_.create(n, slot_bytes, &name, &why)) {
      message[0] = 1;
      std::memcpy(&message[1], name.c_str(), std::min(name.size(), kNameBytes - 2));
    }
    ok = message[0];
    plx_result_t result = PLX_SUCCESS;
    for (int r = 1; r < n && result == PLX_SUCCESS; ++r) {
      result = exchange(transport, true, r, tag_base | 0, message.data(), kNameBytes);
    }
    // 2. Every answer, then the name goes (mapped segments stay valid).
    for (int r = 1; r < n && result == PLX_SUCCESS; ++r) {
      unsigned char answer = 0;
      result = exchange(transport, false, r, tag_base | 1, &answer, 1);
      ok = ok && answer;
    }
    if (message[0]) unlink_segment(name);
    PLX_CHECK(result);
    // 3. The verdict.
    for (int r = 1; r < n; ++r) PLX_CHECK(exchange(transport, true, r, tag_base | 2, &ok, 1));
  } else {
    std::vector<unsigned char> message(kNameBytes, 0);
    PLX_CHECK(exchange(transport, false, 0, tag_base | 0, message.data(), kNameBytes));
    unsigned char answer = 0;
    if (!wanted) {
      why = "PLEXUS_SHM=0";
    } else if (message[0]) {
      message[kNameBytes - 1] = 0;
      answer = memory->segment_.open(reinterpret_cast<const char*>(&message[1]), n, &why) ? 1 : 0;
    } else {
      why = "rank 0 did not make it";
    }
    PLX_CHECK(exchange(transport, true, 0, tag_base | 1, &answer, 1));
    PLX_CHECK(exchange(transport, false, 0, tag_base | 2, &ok, 1));
    if (ok && !answer) ok = 0;
  }
  if (!ok) {
    log_message(LogLevel::Info, "rank {}: no peer memory for this communicator ({})", rank,
                why.empty() ? "another rank failed to map it" : why);
    out->reset();
    return PLX_SUCCESS;
  }
  memory->slot_bytes_ = memory->segment_.header().slot_bytes;
  memory->segment_.words(rank).pid_namespace = pid_namespace();
  memory->segment_.words(rank).pid = static_cast<int32_t>(::getpid());
  *out = std::move(memory);
  return PLX_SUCCESS;
}

plx_result_t PeerMemory::usable(const char* op) const {
  if (failed_ == PLX_SUCCESS) return PLX_SUCCESS;
  return set_error(failed_, fmt::format("{}: rank {}: peer memory unusable after an earlier "
                                        "failure: {}",
                                        op, rank_, failure_));
}

plx_result_t PeerMemory::wait_word(int peer, bool arrived_word, uint32_t target, const char* op) {
  PLX_CHECK(usable(op));
  RankWords& words = segment_.words(peer);
  FutexWord& word = arrived_word ? words.arrived : words.reduced;
  for (int i = 0; i < kSpins; ++i) {
    if (reached(word.value.load(std::memory_order_acquire), target)) return PLX_SUCCESS;
    cpu_relax();
  }
  const auto start = Clock::now();
  auto next_pid_check = start + kPidCheckEvery;
  const auto deadline = start + std::chrono::milliseconds(timeout_ms_);
  const char* what = arrived_word ? "stage" : "reduce";
  while (!futex_wait_until(word, target, kSleepUs)) {
    plx_result_t code = PLX_SUCCESS;
    std::string message;
    const auto now = Clock::now();
    if (async_ && async_->aborted()) {
      code = PLX_ERROR_ABORTED;
      message = fmt::format("{}: rank {}: aborted while waiting for peer rank {} to {} piece {}",
                            op, rank_, peer, what, target - 1);
    } else if (async_ && async_->error() != PLX_SUCCESS) {
      code = PLX_ERROR_REMOTE;
      message = fmt::format("{}: rank {}: waiting for peer rank {}: {}", op, rank_, peer,
                            async_->message());
    } else if (now >= next_pid_check) {
      next_pid_check = now + kPidCheckEvery;
      const pid_t pid = words.pid;
      const bool comparable = pid > 0 && words.pid_namespace == pid_namespace();
      if (comparable && ::kill(pid, 0) != 0 && errno == ESRCH) {
        code = PLX_ERROR_REMOTE;
        message = fmt::format("{}: rank {}: peer rank {} (pid {}) exited while this rank waited "
                              "for it to {} piece {}",
                              op, rank_, peer, pid, what, target - 1);
      }
    }
    if (code == PLX_SUCCESS && now >= deadline) {
      code = PLX_ERROR_TIMEOUT;
      message = fmt::format("{}: rank {}: peer rank {} did not {} piece {} within "
                            "PLEXUS_TIMEOUT_MS={}",
                            op, rank_, peer, what, target - 1, timeout_ms_);
    }
    if (code != PLX_SUCCESS) {
      failed_ = code;
      failure_ = message;
      return set_error(code, message);
    }
  }
  return PLX_SUCCESS;
}

plx_result_t PeerMemory::wait_arrived(int peer, uint32_t piece, const char* op) {
  return wait_word(peer, true, piece + 1, op);
}

plx_result_t PeerMemory::wait_reduced(int peer, uint32_t piece, const char* op) {
  return wait_word(peer, false, piece + 1, op);
}

plx_result_t PeerMemory::wait_all_arrived(uint32_t piece, const char* op) {
  if (reached(all_arrived_, piece + 1)) return usable(op);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) PLX_CHECK(wait_arrived(peer, piece, op));
  }
  all_arrived_ = piece + 1;
  return PLX_SUCCESS;
}

plx_result_t PeerMemory::wait_all_reduced(uint32_t piece, const char* op) {
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) PLX_CHECK(wait_reduced(peer, piece, op));
  }
  return PLX_SUCCESS;
}

plx_result_t PeerMemory::wait_writable(uint32_t piece, const char* op) {
  // Piece 0: every `arrived` starts at 0, so wait_all_arrived(2^32 - 1) (target 0) returns.
  return wait_all_arrived(piece - 1, op);
}

}  // namespace plexus::comm
