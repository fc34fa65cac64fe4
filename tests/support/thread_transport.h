// thread_transport.h - an in-process Transport for unit tests: ranks are threads, messages
// are memcpy's between their buffers under one lock.
//
// It implements comm::Transport exactly as documented there, and checks more than a real
// transport does, so that algorithm bugs fail loudly instead of hanging or corrupting memory:
//  - Rendezvous by default: a send does not complete until the matching receive is posted,
//    and the data is copied from the sender's buffer only then. This is the strictest legal
//    behaviour (an algorithm that relies on sends completing early deadlocks and times out).
//    Messages shorter than `eager_bytes` are copied at post time and complete at once instead.
//  - A receive must be posted with exactly the size of the matching send.
//  - A second send or receive with the same (peer, tag) while the first is pending is an error.
//  - protocol_errors() lists every violation; leftover() lists unmatched messages at the end.
// wait_all() blocks on a condition variable (no spinning) and fails with PLX_ERROR_TIMEOUT
// after `timeout`. A request that another rank's thread matches is completed (Request::done and
// result written) only in its own rank's next call (post, test, wait_all, poll_once), as a real
// transport completes requests in the progress calls of the thread that owns them: algorithms
// read Request::done after such a call without a lock.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/transport/transport.h"

namespace plexus::test {

class ThreadFabric;

class ThreadWorld {
 public:
  explicit ThreadWorld(int nranks, size_t eager_bytes = 0,
                       std::chrono::milliseconds timeout = std::chrono::seconds(30));
  ~ThreadWorld();
  ThreadWorld(const ThreadWorld&) = delete;
  ThreadWorld& operator=(const ThreadWorld&) = delete;

  int size() const;
  comm::Transport& transport(int rank);

  // Runs body(rank, transport) on one thread per rank, joins them, and returns each rank's
  // result.
  std::vector<plx_result_t> run(
      const std::function<plx_result_t(int rank, comm::Transport& transport)>& body);

  // Protocol violations seen so far (size mismatch, duplicate tag, bad peer), one per line.
  std::vector<std::string> protocol_errors() const;
  // Sends and receives still unmatched (should be none after a completed collective).
  std::vector<std::string> leftover() const;

 private:
  std::unique_ptr<ThreadFabric> fabric_;
  std::vector<std::unique_ptr<comm::Transport>> transports_;
};

}  // namespace plexus::test
