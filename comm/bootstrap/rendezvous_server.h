// rendezvous_server.h - the root of the bootstrap: a TCP server (Boost.Asio, one background
// thread) that every rank of one communicator connects to.
//
// Every accepted connection is challenged first (handshake.h): one that does not answer with a
// HELLO proving the job's key within 10 s, or sends anything else, is dropped without touching
// the job, having cost at most a 128-byte buffer; at most 64 such connections are open at once
// (the oldest is dropped for a newer one). A handler that throws fails the job with the reason
// instead of the process. Of the admitted, it takes `nranks` ranks (the first HELLO fixes
// nranks, at most 2^20; a disagreeing nranks or a rank claimed twice fails every rank with
// PLX_ERROR_REMOTE), runs allgather rounds over their contributions,
// and then serves as the liveness hub: a rank whose connection drops without GOODBYE is reported
// to every other rank as LOST. When all ranks said GOODBYE it answers ALL_DONE and finishes.
// If not every rank joins within timeout_ms of the first HELLO, all get PLX_ERROR_TIMEOUT naming
// the missing ranks. After a failure the listener stays open until that timeout, so a rank that
// arrives late is told the same error instead of timing out. See wire.h for the messages.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "comm/bootstrap/job_key.h"
#include "plexus/plexus.h"

namespace plexus::bootstrap {

class RendezvousServer {
 public:
  // Binds host:port (port 0: the kernel picks; a host that is not a local address falls back to
  // the wildcard address), listens, and starts serving in a background thread. A listener the
  // launcher passed down for this port (PLEXUS_RENDEZVOUS_FD, inherited_listener.h) is used
  // instead of binding, once per process. Returns
  // PLX_ERROR_SYSTEM naming the address and the OS error if the listener cannot be opened.
  // Only connections that prove `key` (handshake.h) are admitted; see the class comment for
  // what others may cost.
  static plx_result_t start(const std::string& host, int port, const JobKeyBytes& key,
                            int timeout_ms, std::unique_ptr<RendezvousServer>* out);

  ~RendezvousServer();  // stop(), then frees
  RendezvousServer(const RendezvousServer&) = delete;
  RendezvousServer& operator=(const RendezvousServer&) = delete;

  int port() const;  // the bound port (useful with port 0)

  // True once the server has nothing left to do (all ranks gone, or it failed or was stopped).
  bool finished() const;

  // Waits until finished() or the deadline, whichever comes first. Returns finished().
  bool wait_finished(std::chrono::steady_clock::time_point deadline);

  // Waits, polling every few milliseconds until the deadline, for the server to have failed the
  // job (fail_all: a rank's ABORT during setup, say) and to have written that error to every
  // rank: those connected, and those that join later (their HELLO is answered with it). True
  // once it has (or the server finished). The root calls it after its own setup failure, before
  // stop() would cut the error short: the others then read the reason, not a closed connection
  // or, for a rank not yet connected, a refused one until PLEXUS_TIMEOUT_MS.
  bool wait_failure_sent(std::chrono::steady_clock::time_point deadline);

  // Closes the listener and every connection at once and joins the thread. Idempotent.
  void stop();

 private:
  struct Impl;
  explicit RendezvousServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace plexus::bootstrap
