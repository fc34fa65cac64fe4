// peer_memory.cpp - see peer_memory.h.
#include "comm/transport/peer_memory/peer_memory.h"

#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "comm/base/async_state.h"
#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"

namespace plexus::comm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kNameBytes = 128;      // the create message: status byte, then the name
constexpr int kSleepUs = 2000;          // one futex sleep; checks run between sleeps
constexpr int kIdleSleepUs = 250;       // with IdleWork: run it at least this often
constexpr int kSpins = 200;             // polls before the first sleep (a few microseconds)
constexpr int kYields = 32;             // then polls after sched_yield, at least (see wait_word)
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

// "allreduce:shm: rank 3", or "rank 3" for an empty op (the caller's own prefix names it).
std::string who(const char* op, int rank) {
  return op != nullptr && *op != '\0' ? fmt::format("{}: rank {}", op, rank)
                                       : fmt::format("rank {}", rank);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

}  // namespace

PeerMemory::PeerMemory(std::vector<int> members, int rank, int timeout_ms,
                       std::shared_ptr<AsyncState> async)
    : members_(std::move(members)),
      rank_(rank),
      size_(static_cast<int>(members_.size())),
      timeout_ms_(timeout_ms),
      async_(std::move(async)) {
  // A bad value fails communicator creation where the transport reads it (libfabric, UCX);
  // here the default stays.
  int spin_us = spin_us_;
  if (config_spin_us(&spin_us) == PLX_SUCCESS) spin_us_ = spin_us;
}

PeerMemory::~PeerMemory() = default;

plx_result_t PeerMemory::open(Transport& transport, uint64_t tag_base, bool wanted,
                              size_t slot_bytes, int timeout_ms, std::shared_ptr<AsyncState> async,
                              std::unique_ptr<PeerMemory>* out) {
  std::vector<int> everyone(static_cast<size_t>(transport.size()));
  for (size_t r = 0; r < everyone.size(); ++r) everyone[r] = static_cast<int>(r);
  return open(transport, tag_base, std::move(everyone), wanted, slot_bytes, timeout_ms,
              std::move(async), out);
}

plx_result_t PeerMemory::open(Transport& transport, uint64_t tag_base, std::vector<int> members,
                              bool wanted, size_t slot_bytes, int timeout_ms,
                              std::shared_ptr<AsyncState> async,
                              std::unique_ptr<PeerMemory>* out) {
  const int me = transport.rank();
  const auto found = std::find(members.begin(), members.end(), me);
  if (found == members.end()) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("peer memory: rank {}: not among the {} ranks opening a segment",
                                 me, members.size()));
  }
  const int rank = static_cast<int>(found - members.begin());
  const int n = static_cast<int>(members.size());
  const int creator = members[0];
  slot_bytes = std::clamp<size_t>((std::min(slot_bytes, kMaxSlotBytes) + 4095) / 4096 * 4096,
                                  4096, kMaxSlotBytes);
  std::unique_ptr<PeerMemory> memory(new PeerMemory(members, rank, timeout_ms, std::move(async)));
  std::string why;
  unsigned char ok = 1;
  if (rank == 0) {
    // 1. Create, and send the name to every member (status 0: creation failed).
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
      result = exchange(transport, true, members[r], tag_base | 0, message.data(), kNameBytes);
    }
    // 2. Every answer, then the name goes (mapped segments stay valid).
    for (int r = 1; r < n && result == PLX_SUCCESS; ++r) {
      unsigned char answer = 0;
      result = exchange(transport, false, members[r], tag_base | 1, &answer, 1);
      ok = ok && answer;
    }
    if (message[0]) unlink_segment(name);
    PLX_CHECK(result);
    // 3. The verdict.
    for (int r = 1; r < n; ++r) {
      PLX_CHECK(exchange(transport, true, members[r], tag_base | 2, &ok, 1));
    }
  } else {
    std::vector<unsigned char> message(kNameBytes, 0);
    PLX_CHECK(exchange(transport, false, creator, tag_base | 0, message.data(), kNameBytes));
    unsigned char answer = 0;
    if (!wanted) {
      why = "PLEXUS_SHM=0";
    } else if (message[0]) {
      message[kNameBytes - 1] = 0;
      answer = memory->segment_.open(reinterpret_cast<const char*>(&message[1]), n, &why) ? 1 : 0;
    } else {
      why = fmt::format("rank {} did not make it", creator);
    }
    PLX_CHECK(exchange(transport, true, creator, tag_base | 1, &answer, 1));
    PLX_CHECK(exchange(transport, false, creator, tag_base | 2, &ok, 1));
    if (ok && !answer) ok = 0;
  }
  if (!ok) {
    log_message(LogLevel::Info, "rank {}: no peer memory among {} ranks ({})", me, n,
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
  return set_error(failed_, fmt::format("{}: peer memory unusable after an earlier failure: {}",
                                        who(op, member_rank(rank_)), failure_));
}

plx_result_t PeerMemory::fail(plx_result_t code, std::string message) {
  failed_ = code;
  failure_ = message;
  return set_error(code, std::move(message));
}

plx_result_t PeerMemory::wait_word(int peer, FutexWord RankWords::*member, uint32_t target,
                                   const char* op, const char* what, const IdleWork* idle) {
  PLX_CHECK(usable(op));
  if (idle == nullptr) idle = background_;
  RankWords& words = segment_.words(peer);
  FutexWord& word = words.*member;
  for (int i = 0; i < kSpins; ++i) {
    if (reached(word.value.load(std::memory_order_acquire), target)) return PLX_SUCCESS;
    cpu_relax();
  }
  // Then polls with sched_yield between them (giving way to oversubscribed ranks) for
  // PLEXUS_SPIN_US before it sleeps: a peer busy with a copy of tens of microseconds (a large
  // piece) is then met without a futex round trip. Not with idle work (a group's sends and
  // receives, a hierarchical algorithm's network steps): that must run at least every
  // kIdleSleepUs, which the loop below does.
  const auto spin_end = Clock::now() + std::chrono::microseconds(idle ? 0 : spin_us_);
  for (int i = 0;; ++i) {
    ::sched_yield();
    if (reached(word.value.load(std::memory_order_acquire), target)) return PLX_SUCCESS;
    if (i >= kYields && Clock::now() >= spin_end) break;
  }
  const auto start = Clock::now();
  auto next_pid_check = start + kPidCheckEvery;
  const auto deadline = start + std::chrono::milliseconds(timeout_ms_);
  const int me = member_rank(rank_), them = member_rank(peer);
  const int sleep_us = idle ? kIdleSleepUs : kSleepUs;
  while (true) {
    if (idle) {
      // The caller's work in flight; its failure (the transport's, with its message) ends the
      // collective, after which this rank's counters no longer match its peers'.
      if (const plx_result_t code = (*idle)(); code != PLX_SUCCESS) {
        failed_ = code;
        failure_ = fmt::format("work done while waiting for peer rank {} failed", them);
        return code;
      }
    }
    if (futex_wait_until(word, target, sleep_us)) return PLX_SUCCESS;
    const auto now = Clock::now();
    if (async_ && async_->aborted()) {
      return fail(PLX_ERROR_ABORTED,
                  fmt::format("{}: aborted while waiting for peer rank {} to {} {}",
                              who(op, me), them, what, target - 1));
    }
    if (async_ && async_->error() != PLX_SUCCESS) {
      return fail(PLX_ERROR_REMOTE, fmt::format("{}: waiting for peer rank {}: {}", who(op, me),
                                                them, async_->message()));
    }
    if (now >= next_pid_check) {
      next_pid_check = now + kPidCheckEvery;
      const pid_t pid = words.pid;
      const bool comparable = pid > 0 && words.pid_namespace == pid_namespace();
      if (comparable && ::kill(pid, 0) != 0 && errno == ESRCH) {
        return fail(PLX_ERROR_REMOTE,
                    fmt::format("{}: peer rank {} lost (pid {} exited while this rank "
                                "waited for it to {} {})",
                                who(op, me), them, pid, what, target - 1));
      }
    }
    if (now >= deadline) {
      return fail(PLX_ERROR_TIMEOUT,
                  fmt::format("{}: peer rank {} did not {} {} within "
                              "PLEXUS_TIMEOUT_MS={}",
                              who(op, me), them, what, target - 1, timeout_ms_));
    }
  }
}

pid_t PeerMemory::peer_pid(int peer) const {
  const RankWords& words = segment_.words(peer);
  return words.pid > 0 && words.pid_namespace == pid_namespace() ? words.pid : 0;
}

plx_result_t PeerMemory::wait_arrived(int peer, uint32_t piece, const char* op,
                                      const IdleWork* idle) {
  return wait_word(peer, &RankWords::arrived, piece + 1, op, "stage piece", idle);
}

plx_result_t PeerMemory::wait_reduced(int peer, uint32_t piece, const char* op) {
  return wait_word(peer, &RankWords::reduced, piece + 1, op, "reduce piece", nullptr);
}

plx_result_t PeerMemory::wait_all_arrived(uint32_t piece, const char* op, const IdleWork* idle) {
  if (reached(all_arrived_, piece + 1)) return usable(op);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) PLX_CHECK(wait_arrived(peer, piece, op, idle));
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

plx_result_t PeerMemory::wait_writable(uint32_t piece, const char* op, const IdleWork* idle) {
  // Piece 0: every `arrived` starts at 0, so wait_all_arrived(2^32 - 1) (target 0) returns.
  return wait_all_arrived(piece - 1, op, idle);
}

plx_result_t PeerMemory::read_notes(uint32_t piece, size_t bytes, void* all, const char* op) {
  auto* out = static_cast<unsigned char*>(all);
  for (int member = 0; member < size_; ++member) {
    const RankWords& words = segment_.words(member);
    if (words.note_piece[piece % 2] != piece + 1) {
      return fail(PLX_ERROR_MISMATCH,
                  fmt::format("{}: peer rank {} came to piece {} without its argument check "
                              "(is PLEXUS_CHECK_ARGS set alike on every rank?)",
                              who(op, member_rank(rank_)), member_rank(member), piece));
    }
    std::memcpy(out + static_cast<size_t>(member) * bytes, words.notes[piece % 2], bytes);
  }
  return PLX_SUCCESS;
}

plx_result_t PeerMemory::exchange_notes(const void* note, size_t bytes, void* all,
                                        const char* op, const char* what) {
  PLX_CHECK(usable(op));
  if (bytes > kNoteBytes) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("{}: a note of {} bytes (at most {})",
                                                     who(op, member_rank(rank_)), bytes,
                                                     kNoteBytes));
  }
  const uint32_t g = next_pieces(1);
  // Writable: every peer arrived at g - 1 (wait_writable's rule, with `what` in its messages).
  for (int peer = 0; peer < size_ && !reached(all_arrived_, g); ++peer) {
    if (peer != rank_) PLX_CHECK(wait_word(peer, &RankWords::arrived, g, op, what, nullptr));
  }
  post_note(g, note, bytes);
  arrive(g);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer != rank_) PLX_CHECK(wait_word(peer, &RankWords::arrived, g + 1, op, what, nullptr));
  }
  all_arrived_ = g + 1;
  return read_notes(g, bytes, all, op);
}

}  // namespace plexus::comm
