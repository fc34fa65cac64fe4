// rendezvous_client.h - one rank's connection to the rendezvous server: join, allgather the
// setup rounds, then keep the connection open as the liveness channel.
//
// Once connected, a background thread reads the connection: the setup tables go to allgather();
// a LOST or ERROR from the root, or the connection itself dropping (the root is in rank 0's
// process, so that means rank 0 is lost), becomes an error in the shared AsyncState at once,
// which the transport's wait loops check, during setup as afterwards.
// goodbye() is the clean exit handshake of plx_comm_destroy; abort_now() the abrupt one.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/base/async_state.h"
#include "comm/bootstrap/unique_id.h"
#include "comm/bootstrap/wire.h"
#include "plexus/plexus.h"

namespace plexus::bootstrap {

class RendezvousClient {
 public:
  // Connects (retrying refused connections until timeout_ms) and runs the handshake of
  // handshake.h with address.key: answers the root's CHALLENGE with a HELLO and checks its
  // WELCOME. Errors: PLX_ERROR_TIMEOUT if no connection was made in time;
  // PLX_ERROR_INVALID_ARGUMENT if the root refused the key, or did not prove it (another job's
  // server), or speaks another wire version; the root's own error if it already failed. Messages
  // start "rank R: rendezvous at".
  static plx_result_t connect(const RendezvousAddress& address, int rank, int nranks,
                              int timeout_ms, std::shared_ptr<comm::AsyncState> async,
                              std::unique_ptr<RendezvousClient>* out);

  ~RendezvousClient();  // closes without GOODBYE if still open (peers see this rank lost)
  RendezvousClient(const RendezvousClient&) = delete;
  RendezvousClient& operator=(const RendezvousClient&) = delete;

  // Contributes `mine` to `round` and returns every rank's contribution, indexed by rank.
  // Waits at most timeout_ms (+1 s, so the root's own timeout report arrives first). Fails with
  // the root's error (PLX_ERROR_TIMEOUT, PLX_ERROR_REMOTE, ...) or PLX_ERROR_REMOTE if a rank was
  // lost (the message names it and its reason, e.g. "rank 1 lost (failed while creating its
  // communicator: ...)"), as soon as the root reports it.
  plx_result_t allgather(uint32_t round, const Bytes& mine, std::vector<Bytes>* table);

  // Sends GOODBYE and waits (bounded by timeout_ms) for ALL_DONE: every rank said goodbye.
  // Calls `while_waiting` about every millisecond (the communicator keeps its transport making
  // progress, so peers still receive what this rank sent last). PLX_SUCCESS, or
  // PLX_ERROR_REMOTE (a rank was lost; message names it), or PLX_ERROR_TIMEOUT. Closes the
  // connection in every case.
  plx_result_t goodbye(const std::function<void()>& while_waiting);

  // Tells the root "aborted: <reason>" (best effort) and closes at once. Idempotent.
  void abort_now(const std::string& reason);

  // Communicators split from this one have no rendezvous of their own; their aborts travel
  // over this connection. watch_communicator() files a split communicator's AsyncState under
  // its id (the same on every member, see plx_comm::comm_id): a COMM_ABORT for that id from
  // another rank records PLX_ERROR_REMOTE with its reason there. forget_communicator() undoes
  // it. announce_abort() sends COMM_ABORT {id, reason}, which the root passes to every other
  // rank, and waits up to 1 s for it to be written. All three are thread-safe and do nothing
  // once the connection is closed.
  void watch_communicator(uint64_t comm_id, std::weak_ptr<comm::AsyncState> async);
  void forget_communicator(uint64_t comm_id);
  void announce_abort(uint64_t comm_id, const std::string& reason);

 private:
  struct Impl;
  explicit RendezvousClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus::bootstrap
