// async_state.h - what background threads tell the thread running a collective.
//
// The liveness watcher records a lost peer here, plx_comm_abort() raises the abort flag, and the
// transport's wait loop checks both on every pass, so a collective blocked on a dead peer returns
// within a few milliseconds of the news. Shared (shared_ptr) by the communicator, its transport
// and its rendezvous client, so whichever is destroyed last frees it.
#pragma once

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include "plexus/plexus.h"

namespace plexus::comm {

class AsyncState {
 public:
  void request_abort() { aborted_.store(true, std::memory_order_release); }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  // Records the first background error (later ones are ignored). Thread-safe.
  void record_error(plx_result_t code, std::string message) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.load(std::memory_order_relaxed) != PLX_SUCCESS) return;
    message_ = std::move(message);
    error_.store(code, std::memory_order_release);
  }

  // PLX_SUCCESS while nothing went wrong in the background. Never blocks.
  plx_result_t error() const { return error_.load(std::memory_order_acquire); }

  std::string message() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return message_;
  }

 private:
  std::atomic<bool> aborted_{false};
  std::atomic<plx_result_t> error_{PLX_SUCCESS};
  mutable std::mutex mutex_;
  std::string message_;
};

}  // namespace plexus::comm
