// futex_word.cpp - see futex_word.h.
#include "comm/transport/peer_memory/futex_word.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <climits>

namespace plexus::comm {
namespace {

long futex(std::atomic<uint32_t>* word, int op, uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), op, value, timeout, nullptr, 0);
}

}  // namespace

void futex_publish(FutexWord& word, uint32_t value) {
  word.value.store(value, std::memory_order_seq_cst);
  // seq_cst store then load: a waiter that counted itself before our store is seen here, and
  // one that counts itself after it re-reads the new value before sleeping.
  if (word.sleepers.load(std::memory_order_seq_cst) > 0) {
    futex(&word.value, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

bool futex_wait_until(FutexWord& word, uint32_t target, int timeout_us) {
  uint32_t seen = word.value.load(std::memory_order_acquire);
  if (reached(seen, target)) return true;
  word.sleepers.fetch_add(1, std::memory_order_seq_cst);
  seen = word.value.load(std::memory_order_seq_cst);
  if (!reached(seen, target)) {
    const timespec timeout{timeout_us / 1000000, (timeout_us % 1000000) * 1000L};
    // Returns at once (EAGAIN) if the word no longer holds `seen`.
    futex(&word.value, FUTEX_WAIT, seen, &timeout);
  }
  word.sleepers.fetch_sub(1, std::memory_order_seq_cst);
  return reached(word.value.load(std::memory_order_acquire), target);
}

}  // namespace plexus::comm
