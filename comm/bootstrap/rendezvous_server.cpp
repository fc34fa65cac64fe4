// rendezvous_server.cpp - the bootstrap root (see rendezvous_server.h and wire.h).
//
// Everything below runs on the server's one thread, so its state needs no locks; the public
// methods only post work to it or wait for it.
#include "comm/bootstrap/rendezvous_server.h"

#include <fmt/format.h>

#include <array>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange
#include <boost/asio.hpp>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/bootstrap/handshake.h"
#include "comm/bootstrap/inherited_listener.h"
#include "comm/bootstrap/keepalive.h"
#include "comm/bootstrap/wire.h"
#include "comm/bootstrap/wire_messages.h"

namespace plexus::bootstrap {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;

namespace {

// Bounds on what a connection that has not proven the job key may cost the server: how many
// such connections may be open at once (beyond this the oldest is dropped, so a flood cannot
// lock out a late rank for long), and how long one may take to send its HELLO.
constexpr size_t kMaxUnadmitted = 64;
constexpr auto kHelloDeadline = std::chrono::seconds(10);
// More ranks than any job has; a larger claim is refused before anything is sized by it.
constexpr int kMaxRanks = 1 << 20;

struct Connection {
  explicit Connection(asio::io_context& io) : socket(io), hello_timer(io) {}
  tcp::socket socket;
  asio::steady_timer hello_timer;
  std::string peer;      // "address:port", for the log
  Nonce server_nonce{};  // the CHALLENGE this connection must answer
  bool admitted = false;  // proved the key: may send anything up to kMaxPayloadBytes
  int rank = -1;  // set by HELLO
  bool said_goodbye = false;
  bool open = true;
  bool closing = false;  // half-closed after a final message; reads until the peer closes
  std::array<uint8_t, kHeaderBytes> header{};
  Bytes payload;
  std::deque<Bytes> outbox;
  bool writing = false;
};

using ConnectionPtr = std::shared_ptr<Connection>;

}  // namespace

struct RendezvousServer::Impl {
  asio::io_context io;
  tcp::acceptor acceptor{io};
  asio::steady_timer join_timer{io};
  std::thread thread;
  pid_t owner_pid = getpid();  // a forked child must not join its parent's thread
  std::atomic<bool> finished{false};
  std::mutex finished_mutex;
  std::condition_variable finished_cv;

  std::string host;
  int port = 0;
  JobKeyBytes key{};
  int timeout_ms = 0;
  asio::steady_timer accept_retry{io};

  // Server-thread state.
  int nranks = -1;
  int first_rank = -1;  // the rank whose HELLO fixed nranks
  int joined = 0;
  int goodbyes = 0;
  bool setup_done = false;  // the table of kLastSetupRound went out
  bool failed = false;
  plx_result_t failure_code = PLX_SUCCESS;
  std::string failure_message;
  bool join_timer_running = false;
  std::vector<ConnectionPtr> connections;  // admitted: proved the key
  std::deque<ConnectionPtr> unadmitted;   // oldest first, at most kMaxUnadmitted
  uint64_t refused = 0;                   // connections dropped before admission
  std::vector<ConnectionPtr> by_rank;
  std::vector<bool> lost;
  std::vector<bool> told_late;  // ranks that joined after the failure and were told it
  std::map<uint32_t, std::vector<std::optional<Bytes>>> rounds;
  std::map<uint32_t, int> round_counts;
  // One timer per open round, from its first contribution: ranks that joined but never
  // contribute (stopped, stuck) fail the round naming them.
  std::map<uint32_t, std::unique_ptr<asio::steady_timer>> round_timers;

  std::string where() const { return fmt::format("rendezvous at {}:{}", host, port); }

  void run() {
    accept_next();
    // A handler that throws (std::bad_alloc, say) must not take the process down: the job fails
    // with the reason and the loop goes on serving the error to every rank.
    while (true) {
      try {
        io.run();
        break;
      } catch (const std::exception& e) {
        log_message(LogLevel::Warn, "{}: internal error: {}", where(), e.what());
        fail_all(PLX_ERROR_INTERNAL, fmt::format("{}: internal error: {}", where(), e.what()));
      }
    }
    {
      std::lock_guard<std::mutex> lock(finished_mutex);
      finished.store(true);
    }
    finished_cv.notify_all();
    log_message(LogLevel::Info, "{}: server finished", where());
  }

  void accept_next() {
    auto conn = std::make_shared<Connection>(io);
    acceptor.async_accept(conn->socket, [this, conn](const boost::system::error_code& ec) {
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;  // closed
      if (ec) {
        // Out of descriptors (EMFILE), say: keep the listener, try again shortly.
        log_message(LogLevel::Warn, "{}: accept failed: {}; retrying in 100 ms", where(),
                    ec.message());
        accept_retry.expires_after(std::chrono::milliseconds(100));
        accept_retry.async_wait([this](const boost::system::error_code& e) {
          if (!e) accept_next();
        });
        return;
      }
      on_accept(conn);
      accept_next();
    });
  }

  // A new connection gets a CHALLENGE and kHelloDeadline to answer it with a valid HELLO.
  void on_accept(const ConnectionPtr& conn) {
    boost::system::error_code ignored;
    conn->socket.set_option(tcp::no_delay(true), ignored);
    enable_keepalive(conn->socket.native_handle());
    const auto remote = conn->socket.remote_endpoint(ignored);
    conn->peer = ignored ? "?" : fmt::format("{}:{}", remote.address().to_string(),
                                             remote.port());
    if (unadmitted.size() >= kMaxUnadmitted) {
      const ConnectionPtr oldest = unadmitted.front();
      drop(oldest, "too many unadmitted connections");
    }
    if (random_nonce(&conn->server_nonce) != PLX_SUCCESS) return close(conn);
    unadmitted.push_back(conn);
    conn->hello_timer.expires_after(kHelloDeadline);
    conn->hello_timer.async_wait([this, conn](const boost::system::error_code& e) {
      if (!e && !conn->admitted) drop(conn, "no HELLO within 10 s");
    });
    send(conn, to_frame(ChallengeMessage{kWireVersion, conn->server_nonce}));
    read_header(conn);
  }

  // Closes a connection that never proved the key; nothing of the job is touched.
  void drop(const ConnectionPtr& conn, const char* why) {
    ++refused;
    log_message(LogLevel::Info, "{}: dropped a connection from {} ({}; {} so far)", where(),
                conn->peer, why, refused);
    close(conn);
  }

  void read_header(const ConnectionPtr& conn) {
    asio::async_read(conn->socket, asio::buffer(conn->header),
                     [this, conn](const boost::system::error_code& ec, size_t) {
                       if (ec) return on_disconnect(conn);
                       MessageType type;
                       uint32_t bytes = 0;
                       parse_header(conn->header.data(), &type, &bytes);
                       if (!conn->admitted &&
                           (type != MessageType::Hello || bytes > kMaxHelloBytes)) {
                         return drop(conn, "not a HELLO");
                       }
                       if (bytes > kMaxPayloadBytes) return on_disconnect(conn);
                       conn->payload.resize(bytes);
                       asio::async_read(conn->socket, asio::buffer(conn->payload),
                                        [this, conn, type](const boost::system::error_code& ec2,
                                                           size_t) {
                                          if (ec2) return on_disconnect(conn);
                                          if (!conn->closing) on_message(conn, type);
                                          if (conn->open) read_header(conn);
                                        });
                     });
  }

  void on_message(const ConnectionPtr& conn, MessageType type) {
    switch (type) {
      case MessageType::Hello: {
        HelloMessage hello;
        if (!parse_message(conn->payload, &hello)) return drop(conn, "malformed HELLO");
        if (!conn->admitted) return on_hello(conn, hello);
        break;
      }
      case MessageType::Contribute: {
        ContributeMessage contribution;
        if (parse_message(conn->payload, &contribution) && conn->rank >= 0) {
          on_contribute(conn->rank, contribution.round, std::move(contribution.data));
        }
        break;
      }
      case MessageType::CommAbort: {
        CommAbortMessage abort;
        if (!parse_message(conn->payload, &abort) || conn->rank < 0 || failed) break;
        // Passed on as it came; only members of that split communicator have it filed.
        const Bytes frame = to_frame(abort);
        for (const auto& peer : by_rank) {
          if (peer && peer != conn) send(peer, frame);
        }
        break;
      }
      case MessageType::Goodbye:
        if (conn->rank >= 0 && !conn->said_goodbye) on_goodbye(conn);
        break;
      case MessageType::Abort: {
        AbortMessage abort;  // a malformed one is an abort without a reason
        parse_message(conn->payload, &abort);
        close(conn);
        if (conn->rank >= 0 && !failed) rank_gone(conn->rank, abort.reason);
        break;
      }
      default:
        log_message(LogLevel::Warn, "{}: unexpected {} message from rank {}", where(),
                    message_type_name(type), conn->rank);
        break;
    }
  }

  void on_hello(const ConnectionPtr& conn, const HelloMessage& hello) {
    const uint32_t version = hello.version;
    const int rank = hello.rank;
    const int n = hello.nranks;
    if (version != kWireVersion) {
      return refuse(conn, PLX_ERROR_INVALID_ARGUMENT,
                    fmt::format("{}: bad HELLO (wire version {}, expected {}: mixed Plexus "
                                "versions?)",
                                where(), version, kWireVersion));
    }
    const Mac expected =
        handshake_mac(key, MacPurpose::Hello, conn->server_nonce, hello.client_nonce, rank, n);
    if (!macs_equal(hello.mac, expected)) {
      ++refused;
      log_message(LogLevel::Info, "{}: refused {} (claimed rank {}): wrong job key", where(),
                  conn->peer, rank);
      return refuse(conn, PLX_ERROR_INVALID_ARGUMENT,
                    fmt::format("{}: this rendezvous belongs to another job: the job key does "
                                "not match (PLEXUS_JOB_TOKEN or launcher job id differ, or a "
                                "stale unique id)",
                                where()));
    }
    // Admitted: the key is proven, from here on the connection counts as one of the job's.
    conn->admitted = true;
    conn->hello_timer.cancel();
    std::erase(unadmitted, conn);
    connections.push_back(conn);
    send(conn, to_frame(WelcomeMessage{handshake_mac(key, MacPurpose::Welcome, conn->server_nonce,
                                                     hello.client_nonce, rank, n)}));
    if (failed) {  // a late joiner
      if (nranks > 0 && rank >= 0 && rank < nranks) told_late[rank] = true;
      return refuse(conn, failure_code, failure_message);
    }
    if (conn->rank >= 0) return;
    if (nranks < 0) {
      if (n < 1 || n > kMaxRanks) {
        return refuse(conn, PLX_ERROR_INVALID_ARGUMENT,
                      fmt::format("{}: rank {} passed nranks {}, not in 1..{}", where(), rank, n,
                                  kMaxRanks));
      }
      nranks = n;
      first_rank = rank;
      by_rank.assign(n, nullptr);
      lost.assign(n, false);
      told_late.assign(n, false);
      join_timer.expires_after(std::chrono::milliseconds(timeout_ms));
      join_timer_running = true;
      join_timer.async_wait([this](const boost::system::error_code& ec) {
        join_timer_running = false;
        if (!ec) on_join_timeout();
      });
    }
    if (n != nranks) {
      return fail_all(PLX_ERROR_REMOTE,
                      fmt::format("ranks disagree on nranks: rank {} passed {}, rank {} passed {}",
                                  first_rank, nranks, rank, n));
    }
    if (rank < 0 || rank >= nranks) {
      return fail_all(PLX_ERROR_REMOTE,
                      fmt::format("a rank joined as rank {}, not in 0..{}", rank, nranks - 1));
    }
    if (by_rank[rank]) {
      return fail_all(PLX_ERROR_REMOTE, fmt::format("two ranks claim rank {}", rank));
    }
    by_rank[rank] = conn;
    conn->rank = rank;
    ++joined;
    log_message(LogLevel::Trace, "{}: rank {} joined ({} of {})", where(), rank, joined, nranks);
    if (joined == nranks) {
      join_timer.cancel();
      close_listener();
    }
  }

  void on_contribute(int rank, uint32_t round, Bytes data) {
    if (failed) return;
    auto& slots = rounds[round];
    slots.resize(nranks);
    if (slots[rank]) return;  // a repeat: ignore
    slots[rank] = std::move(data);
    if (++round_counts[round] < nranks) {
      if (round_counts[round] == 1) start_round_timer(round);
      return;
    }
    round_timers.erase(round);
    TableMessage table{round, {}};
    table.entries.reserve(slots.size());
    for (auto& slot : slots) table.entries.push_back(std::move(*slot));
    const Bytes frame = to_frame(table);
    for (const auto& peer : by_rank) send(peer, frame);
    if (round == kLastSetupRound) setup_done = true;
    rounds.erase(round);
    round_counts.erase(round);
  }

  void start_round_timer(uint32_t round) {
    auto timer = std::make_unique<asio::steady_timer>(io);
    timer->expires_after(std::chrono::milliseconds(timeout_ms));
    timer->async_wait([this, round](const boost::system::error_code& ec) {
      if (ec || failed || !rounds.count(round)) return;
      std::string missing;
      const auto& slots = rounds[round];
      for (int r = 0; r < nranks; ++r) {
        if (r < static_cast<int>(slots.size()) && slots[r]) continue;
        missing += missing.empty() ? std::to_string(r) : ", " + std::to_string(r);
      }
      fail_all(PLX_ERROR_TIMEOUT,
               fmt::format("{}: setup round {}: ranks {} joined but did not arrive within "
                           "PLEXUS_TIMEOUT_MS={} ms (stopped or stuck?)",
                           where(), round, missing, timeout_ms));
    });
    round_timers[round] = std::move(timer);
  }

  void on_goodbye(const ConnectionPtr& conn) {
    conn->said_goodbye = true;
    if (++goodbyes < nranks) return;
    const Bytes frame = WireWriter().frame(MessageType::AllDone);
    for (const auto& peer : by_rank) {
      send(peer, frame);
      finish_after_flush(peer);
    }
  }

  void on_disconnect(const ConnectionPtr& conn) {
    if (!conn->open) return;
    const bool clean = conn->said_goodbye || conn->closing;
    close(conn);
    if (conn->rank < 0 || clean || failed) return;
    rank_gone(conn->rank, "connection closed");
  }

  // A rank left without GOODBYE. During setup nobody can go on: every rank, and any that joins
  // later, fails with the reason. After it, the others are told and decide for themselves.
  void rank_gone(int rank, const std::string& reason) {
    if (!setup_done) {
      return fail_all(PLX_ERROR_REMOTE,
                      fmt::format("rank {} lost during communicator setup ({})", rank, reason));
    }
    report_lost(rank, reason);
  }

  void on_join_timeout() {
    if (failed) return close_listener();  // late joiners have had their chance
    if (joined >= nranks) return;
    std::string missing;
    for (int r = 0; r < nranks; ++r) {
      if (by_rank[r]) continue;
      missing += missing.empty() ? std::to_string(r) : ", " + std::to_string(r);
    }
    fail_all(PLX_ERROR_TIMEOUT,
             fmt::format("{}: only {} of {} ranks joined within PLEXUS_TIMEOUT_MS={} ms; "
                         "missing ranks: {}",
                         where(), joined, nranks, timeout_ms, missing));
    close_listener();
  }

  void report_lost(int rank, const std::string& reason) {
    if (rank < 0 || rank >= nranks || lost[rank]) return;
    lost[rank] = true;
    log_message(LogLevel::Info, "{}: rank {} lost ({})", where(), rank, reason);
    const Bytes frame = to_frame(LostMessage{rank, reason});
    for (const auto& peer : by_rank) {
      if (peer && peer->rank != rank) send(peer, frame);
    }
  }

  // Fails every rank that has connected. Until the join timeout, ranks that connect later get
  // the same error, so every rank learns the real reason rather than timing out.
  void fail_all(plx_result_t code, const std::string& message) {
    if (failed) return;
    failed = true;
    failure_code = code;
    failure_message = message;
    log_message(LogLevel::Info, "{}: failing every rank: {}", where(), message);
    const Bytes frame = to_frame(ErrorMessage{code, message});
    for (const auto& conn : connections) {
      send(conn, frame);
      finish_after_flush(conn);
    }
    if (!join_timer_running || joined >= nranks) close_listener();
  }

  // Sends an error to one connection and ends it; the others are unaffected.
  void refuse(const ConnectionPtr& conn, plx_result_t code, const std::string& message) {
    send(conn, to_frame(ErrorMessage{code, message}));
    finish_after_flush(conn);
  }

  void send(const ConnectionPtr& conn, const Bytes& frame) {
    if (!conn || !conn->open || conn->closing) return;
    conn->outbox.push_back(frame);
    if (!conn->writing) flush(conn);
  }

  void flush(const ConnectionPtr& conn) {
    conn->writing = true;
    asio::async_write(conn->socket, asio::buffer(conn->outbox.front()),
                      [this, conn](const boost::system::error_code& ec, size_t) {
                        conn->writing = false;
                        if (ec) return on_disconnect(conn);
                        conn->outbox.pop_front();
                        if (!conn->outbox.empty()) return flush(conn);
                        if (conn->closing && conn->open) {
                          // Half-close: the peer reads what we sent, then closes; our pending
                          // read sees that and closes our side. Avoids a reset losing data.
                          boost::system::error_code ignored;
                          conn->socket.shutdown(tcp::socket::shutdown_send, ignored);
                        }
                      });
  }

  // Marks the connection as ending: no further messages, half-close once the outbox drains.
  void finish_after_flush(const ConnectionPtr& conn) {
    if (!conn || !conn->open || conn->closing) return;
    conn->closing = true;
    if (!conn->writing && conn->outbox.empty()) {
      boost::system::error_code ignored;
      conn->socket.shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  void close(ConnectionPtr conn) {  // by value: the caller's reference may point into unadmitted
    if (!conn->open) return;
    conn->open = false;
    conn->hello_timer.cancel();
    if (!conn->admitted) std::erase(unadmitted, conn);
    boost::system::error_code ignored;
    conn->socket.shutdown(tcp::socket::shutdown_both, ignored);
    conn->socket.close(ignored);
  }

  void close_listener() {
    boost::system::error_code ignored;
    acceptor.close(ignored);
    accept_retry.cancel();
  }

  void close_everything() {
    close_listener();
    join_timer.cancel();
    round_timers.clear();
    accept_retry.cancel();
    for (const auto& conn : connections) close(conn);
    const std::deque<ConnectionPtr> waiting = unadmitted;
    for (const auto& conn : waiting) close(conn);
  }
};

RendezvousServer::RendezvousServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousServer::~RendezvousServer() { stop(); }

plx_result_t RendezvousServer::start(const std::string& host, int port, const JobKeyBytes& key,
                                     int timeout_ms, std::unique_ptr<RendezvousServer>* out) {
  auto impl = std::make_unique<Impl>();
  impl->host = host;
  impl->key = key;
  impl->timeout_ms = timeout_ms;
  boost::system::error_code ec;
  asio::ip::address address = asio::ip::make_address(host, ec);
  if (ec) {
    tcp::resolver resolver(impl->io);
    auto results = resolver.resolve(host, "", ec);
    if (ec || results.empty()) {
      return set_error(PLX_ERROR_SYSTEM, fmt::format("cannot resolve rendezvous address {}: {}",
                                                     host, ec.message()));
    }
    address = results.begin()->endpoint().address();
  }
  tcp::endpoint endpoint(address, static_cast<unsigned short>(port));
  const int inherited =
      take_inherited_listener(address.is_v6() ? AF_INET6 : AF_INET, port);
  if (inherited >= 0) {
    // The launcher's listener (inherited_listener.h): already bound and listening on `port`.
    impl->acceptor.assign(endpoint.protocol(), inherited, ec);
    if (ec) {
      ::close(inherited);
      return set_error(PLX_ERROR_SYSTEM, fmt::format("cannot use the inherited listener "
                                                     "(PLEXUS_RENDEZVOUS_FD) on port {}: {}",
                                                     port, ec.message()));
    }
    log_message(LogLevel::Info, "rendezvous server using the launcher's listener on port {}",
                port);
  } else {
    impl->acceptor.open(endpoint.protocol(), ec);
    if (!ec) impl->acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec) impl->acceptor.bind(endpoint, ec);
    if (ec == boost::system::errc::address_not_available) {
      log_message(LogLevel::Info, "{} is not a local address; listening on all addresses", host);
      endpoint = tcp::endpoint(address.is_v6() ? tcp::v6() : tcp::v4(),
                               static_cast<unsigned short>(port));
      ec.clear();
      impl->acceptor.bind(endpoint, ec);
    }
    if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      std::string hint;
      if (ec == boost::system::errc::address_in_use && inherited_listener_offered()) {
        hint = " (the launcher's listener, PLEXUS_RENDEZVOUS_FD, may hold it: a wrapper that "
               "closed that descriptor before starting this process? keep it open, or give "
               "plexus-run --master-port)";
      }
      return set_error(PLX_ERROR_SYSTEM, fmt::format("cannot listen on {}:{}: {}{}", host, port,
                                                     ec.message(), hint));
    }
  }
  impl->port = impl->acceptor.local_endpoint().port();
  log_message(LogLevel::Info, "rendezvous server listening on {}:{}", host, impl->port);
  initialize_crypto();  // before the thread that checks HELLOs starts (handshake.h)
  Impl* raw = impl.get();
  // start() returns once the server's thread is serving: a process that forks right after (a
  // launcher, a test starting its ranks) then never copies that thread half-way through its
  // start-up, holding a lock of the allocator's that the child could never take again.
  std::promise<void> serving;
  std::future<void> serving_future = serving.get_future();
  asio::post(impl->io, [&serving] { serving.set_value(); });
  impl->thread = std::thread([raw] { raw->run(); });
  serving_future.wait();
  out->reset(new RendezvousServer(std::move(impl)));
  return PLX_SUCCESS;
}

int RendezvousServer::port() const { return impl_->port; }

bool RendezvousServer::finished() const { return impl_->finished.load(); }

bool RendezvousServer::wait_finished(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(impl_->finished_mutex);
  impl_->finished_cv.wait_until(lock, deadline, [this] { return impl_->finished.load(); });
  return impl_->finished.load();
}

bool RendezvousServer::wait_failure_sent(std::chrono::steady_clock::time_point deadline) {
  Impl* raw = impl_.get();
  if (!raw || !raw->thread.joinable() || raw->owner_pid != getpid()) return false;
  while (!raw->finished.load()) {
    auto sent = std::make_shared<std::promise<bool>>();
    std::future<bool> answer = sent->get_future();
    asio::post(raw->io, [raw, sent] {
      bool all = raw->failed;
      for (const auto& conn : raw->connections) {
        all = all && (!conn->open || (!conn->writing && conn->outbox.empty()));
      }
      for (int r = 0; r < raw->nranks && all; ++r) {
        all = raw->by_rank[r] != nullptr || raw->told_late[r];
      }
      sent->set_value(all);
    });
    if (answer.wait_until(deadline) != std::future_status::ready) return false;
    try {
      if (answer.get()) return true;
    } catch (const std::future_error&) {  // the loop ended with the check still queued
      return raw->finished.load();
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

void RendezvousServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  if (impl_->owner_pid != getpid()) {
    // A copy inherited through fork(): its thread lives only in the parent. Leave it be.
    (void)impl_.release();
    return;
  }
  if (!impl_->finished.load()) {
    Impl* raw = impl_.get();
    asio::post(raw->io, [raw] { raw->close_everything(); });
  }
  impl_->thread.join();
}

}  // namespace plexus::bootstrap
