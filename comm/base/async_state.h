// async_state.h - what background threads tell the thread running a collective.
//
// The liveness watcher records a lost peer here, plx_comm_abort() raises the abort flag, and the
// transport's wait loop checks both on every pass, so a collective blocked on a dead peer returns
// within a few milliseconds of the news. Shared (shared_ptr) by the communicator, its transport
// and its rendezvous client, so whichever is destroyed last frees it.
//
// A communicator made by plx_comm_split has its own state (its own abort flag) whose parent is the
// state of the communicator it was split from: a peer lost there is an error here too, since the
// liveness channel belongs to the parent.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "plexus/plexus.h"

namespace plexus::comm {

class AsyncState {
 public:
  AsyncState() = default;
  explicit AsyncState(std::shared_ptr<const AsyncState> parent) : parent_(std::move(parent)) {}

  void request_abort() { aborted_.store(true, std::memory_order_release); }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }

  // Records the first background error (later ones are ignored). Thread-safe.
  void record_error(plx_result_t code, std::string message) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (error_.load(std::memory_order_relaxed) != PLX_SUCCESS) return;
    message_ = std::move(message);
    error_.store(code, std::memory_order_release);
  }

  // PLX_SUCCESS while nothing went wrong in the background (here or in the parent). Never blocks.
  plx_result_t error() const {
    const plx_result_t own = error_.load(std::memory_order_acquire);
    if (own != PLX_SUCCESS || !parent_) return own;
    return parent_->error();
  }

  // A peer aborted this (split) communicator on purpose (COMM_ABORT): its process is alive and
  // closed its endpoint in order, so this side may close its own normally rather than leak it.
  void record_peer_abort(std::string message) {
    record_error(PLX_ERROR_REMOTE, std::move(message));
    peer_aborted_.store(true, std::memory_order_release);
  }
  bool failed_only_by_peer_abort() const {
    return peer_aborted_.load(std::memory_order_acquire) &&
           (!parent_ || parent_->error() == PLX_SUCCESS);
  }

  std::string message() const {
    if (error_.load(std::memory_order_acquire) == PLX_SUCCESS && parent_) {
      return parent_->message();
    }
    std::lock_guard<std::mutex> lock(mutex_);
    return message_;
  }

 private:
  std::shared_ptr<const AsyncState> parent_;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> peer_aborted_{false};
  std::atomic<plx_result_t> error_{PLX_SUCCESS};
  mutable std::mutex mutex_;
  std::string message_;
};

}  // namespace plexus::comm
