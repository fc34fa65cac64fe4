// rendezvous_client.h - one rank's connection to the rendezvous server: join, allgather the
// setup rounds, then keep the connection open as the liveness channel.
//
// After start_watching(), a background thread reads the connection: a LOST from the root, or the
// connection itself dropping (the root is in rank 0's process, so that means rank 0 is lost),
// becomes a PLX_ERROR_REMOTE in the shared AsyncState, which the transport's wait loop checks.
// goodbye() is the clean exit handshake of plx_comm_destroy; abort_now() the abrupt one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/bootstrap/unique_id.h"
#include "comm/bootstrap/wire.h"
#include "comm/core/async_state.h"
#include "plexus/plexus.h"

namespace plexus::bootstrap {

class RendezvousClient {
 public:
  // Connects (retrying refused connections until timeout_ms) and sends HELLO. Errors:
  // PLX_ERROR_TIMEOUT if no connection was made in time; messages start "rank R: rendezvous at".
  static plx_result_t connect(const RendezvousAddress& address, int rank, int nranks,
                              int timeout_ms, std::shared_ptr<comm::AsyncState> async,
                              std::unique_ptr<RendezvousClient>* out);

  ~RendezvousClient();  // closes without GOODBYE if still open (peers see this rank lost)
  RendezvousClient(const RendezvousClient&) = delete;
  RendezvousClient& operator=(const RendezvousClient&) = delete;

  // Contributes `mine` to `round` and returns every rank's contribution, indexed by rank.
  // Waits at most timeout_ms (+1 s, so the root's own timeout report arrives first). Fails with
  // the root's error (PLX_ERROR_TIMEOUT, PLX_ERROR_REMOTE, ...) or PLX_ERROR_REMOTE if a rank was
  // lost. Only before start_watching().
  plx_result_t allgather(uint32_t round, const Bytes& mine, std::vector<Bytes>* table);

  // Starts the watcher thread. Setup is over: the connection is now the liveness channel.
  void start_watching();

  // Sends GOODBYE and waits (bounded by timeout_ms) for ALL_DONE: every rank said goodbye.
  // Calls `while_waiting` about every millisecond (the communicator keeps its transport making
  // progress, so peers still receive what this rank sent last). PLX_SUCCESS, or
  // PLX_ERROR_REMOTE (a rank was lost; message names it), or PLX_ERROR_TIMEOUT. Closes the
  // connection in every case.
  plx_result_t goodbye(const std::function<void()>& while_waiting);

  // Tells the root "aborted: <reason>" (best effort) and closes at once. Idempotent.
  void abort_now(const std::string& reason);

 private:
  struct Impl;
  explicit RendezvousClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus::bootstrap
