// rendezvous_client.cpp - a rank's side of the rendezvous and liveness channel.
//
// Connect and the handshake run on the caller's thread with deadlines; after them
// start_watching() the socket belongs to the watcher thread, and goodbye()/abort_now() reach it
// by posting work to its io_context.
#include "comm/bootstrap/rendezvous_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange
#include <boost/asio.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/bootstrap/handshake.h"
#include "comm/bootstrap/keepalive.h"
#include "comm/bootstrap/wire_messages.h"

namespace plexus::bootstrap {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;


struct RendezvousClient::Impl {
  asio::io_context io;
  tcp::socket socket{io};
  RendezvousAddress address;
  int rank = 0;
  int nranks = 0;
  int timeout_ms = 0;
  std::shared_ptr<comm::AsyncState> async;

  // Watcher state.
  std::thread watcher;
  std::array<uint8_t, kHeaderBytes> header{};
  Bytes payload;
  std::deque<Bytes> outbox;  // frames to send, in order (watcher thread only)
  bool writing = false;
  bool close_when_sent = false;
  std::mutex mutex;  // guards the fields below, shared with the caller's thread
  std::map<uint32_t, std::vector<Bytes>> tables;  // setup rounds answered by the root
  std::map<uint64_t, std::weak_ptr<comm::AsyncState>> split_comms;  // watch_communicator()
  uint64_t frames_written = 0;  // count of frames fully sent (announce_abort waits on it)
  std::condition_variable cv;
  bool all_done = false;
  bool disconnected = false;
  bool closing = false;  // we are closing on purpose: a dropped connection is not a loss
  bool read_closed = false;  // the last read_frame failed because the connection ended

  std::string prefix() const {
    return fmt::format("rank {}: rendezvous at {}:{}", rank, address.host, address.port);
  }

  // Runs the io_context until `done` or the deadline; on timeout cancels and drains.
  bool run_until(Clock::time_point deadline, const bool& done) {
    io.restart();
    io.run_until(deadline);
    if (done) return true;
    boost::system::error_code ignored;
    socket.cancel(ignored);
    io.restart();
    io.run();
    return done;
  }

  plx_result_t connect_with_retry(Clock::time_point deadline) {
    std::string last_error = "no attempt";
    auto backoff = std::chrono::milliseconds(10);
    while (Clock::now() < deadline) {
      boost::system::error_code ec;
      socket.close(ec);
      tcp::resolver resolver(io);
      auto endpoints = resolver.resolve(address.host, std::to_string(address.port), ec);
      if (!ec) {
        bool done = false;
        boost::system::error_code connect_ec;
        asio::async_connect(socket, endpoints,
                            [&](const boost::system::error_code& e, const tcp::endpoint&) {
                              connect_ec = e;
                              done = true;
                            });
        const auto attempt_deadline = std::min(deadline, Clock::now() + std::chrono::seconds(2));
        if (!run_until(attempt_deadline, done)) connect_ec = asio::error::timed_out;
        if (!connect_ec) return PLX_SUCCESS;
        last_error = connect_ec.message();
      } else {
        last_error = "cannot resolve: " + ec.message();
      }
      std::this_thread::sleep_for(std::min<Clock::duration>(backoff, deadline - Clock::now()));
      backoff = std::min(backoff * 2, std::chrono::milliseconds(200));
    }
    return set_error(PLX_ERROR_TIMEOUT,
                     fmt::format("{}: could not connect within PLEXUS_TIMEOUT_MS={} ms "
                                 "(last error: {})",
                                 prefix(), timeout_ms, last_error));
  }

  plx_result_t write_frame(const Bytes& frame, Clock::time_point deadline) {
    bool done = false;
    boost::system::error_code ec;
    asio::async_write(socket, asio::buffer(frame), [&](const boost::system::error_code& e, size_t) {
      ec = e;
      done = true;
    });
    if (!run_until(deadline, done)) {
      return set_error(PLX_ERROR_TIMEOUT, fmt::format("{}: send timed out", prefix()));
    }
    if (ec) {
      return set_error(PLX_ERROR_REMOTE, fmt::format("{}: send failed: {} (rank 0 lost?)",
                                                     prefix(), ec.message()));
    }
    return PLX_SUCCESS;
  }

  plx_result_t read_frame(MessageType* type, Bytes* out, Clock::time_point deadline,
                          uint32_t max_bytes = kMaxPayloadBytes) {
    read_closed = false;
    bool done = false;
    boost::system::error_code ec;
    asio::async_read(socket, asio::buffer(header), [&](const boost::system::error_code& e, size_t) {
      ec = e;
      done = true;
    });
    const bool finished = run_until(deadline, done);
    uint32_t bytes = 0;
    if (finished && !ec) {
      parse_header(header.data(), type, &bytes);
      if (bytes > max_bytes) {
        return set_error(PLX_ERROR_INTERNAL, fmt::format("{}: message of {} bytes from the root "
                                                         "exceeds {}", prefix(), bytes,
                                                         max_bytes));
      }
      out->resize(bytes);
      done = false;
      asio::async_read(socket, asio::buffer(*out), [&](const boost::system::error_code& e, size_t) {
        ec = e;
        done = true;
      });
      if (!run_until(deadline, done)) return read_timeout();
    } else if (!finished) {
      return read_timeout();
    }
    if (ec) {
      read_closed = true;
      return set_error(PLX_ERROR_REMOTE,
                       fmt::format("{}: rank 0 lost (connection to the rendezvous root closed: {})",
                                   prefix(), ec.message()));
    }
    return PLX_SUCCESS;
  }

  // The handshake of handshake.h on a fresh connection. *retry is set when the root closed the
  // connection before answering (a server shedding a flood of strangers, or one going away):
  // the caller connects again while its deadline lasts.
  plx_result_t handshake(Clock::time_point deadline, bool* retry) {
    *retry = false;
    MessageType type;
    Bytes payload;
    if (read_frame(&type, &payload, deadline, kMaxErrorBytes) != PLX_SUCCESS) {
      *retry = read_closed;
      return PLX_ERROR_REMOTE;
    }
    if (type == MessageType::Error) return error_from_root(payload);
    ChallengeMessage challenge;
    if (type != MessageType::Challenge || !parse_message(payload, &challenge)) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: the server sent {} instead of a CHALLENGE (not a Plexus "
                                   "rendezvous?)",
                                   prefix(), message_type_name(type)));
    }
    if (challenge.version != kWireVersion) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: the server speaks wire version {}, this rank {} (mixed "
                                   "Plexus versions?)",
                                   prefix(), challenge.version, kWireVersion));
    }
    const Nonce& server_nonce = challenge.server_nonce;
    HelloMessage hello{kWireVersion, rank, nranks, {}, {}};
    PLX_CHECK(random_nonce(&hello.client_nonce));
    const Nonce& client_nonce = hello.client_nonce;
    hello.mac = handshake_mac(address.key, MacPurpose::Hello, server_nonce, client_nonce, rank,
                              nranks);
    PLX_CHECK(write_frame(to_frame(hello), deadline));
    if (read_frame(&type, &payload, deadline, kMaxErrorBytes) != PLX_SUCCESS) {
      *retry = read_closed;
      return PLX_ERROR_REMOTE;
    }
    if (type == MessageType::Error) return error_from_root(payload);
    WelcomeMessage welcome;
    const Mac expected = handshake_mac(address.key, MacPurpose::Welcome, server_nonce,
                                       client_nonce, rank, nranks);
    if (type != MessageType::Welcome || !parse_message(payload, &welcome) ||
        !macs_equal(welcome.mac, expected)) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: the server did not prove the job key: it belongs to "
                                   "another job (PLEXUS_JOB_TOKEN or launcher job id differ)",
                                   prefix()));
    }
    return PLX_SUCCESS;
  }

  plx_result_t error_from_root(const Bytes& payload) {
    const ErrorMessage error = reported_error(payload);
    return set_error(error.code, fmt::format("rank {}: {}", rank, error.message));
  }

  plx_result_t read_timeout() {
    return set_error(PLX_ERROR_TIMEOUT,
                     fmt::format("{}: not every rank joined within PLEXUS_TIMEOUT_MS={} ms, and "
                                 "the rendezvous root did not say which ranks are missing, as it "
                                 "does when it can: the process running it (rank 0's, or the "
                                 "caller of plx_get_unique_id) is stopped or stuck",
                                 prefix(), timeout_ms));
  }

  // Watcher thread: reads LOST / ALL_DONE / ERROR until the connection ends.
  void watch_next() {
    asio::async_read(socket, asio::buffer(header), [this](const boost::system::error_code& ec,
                                                          size_t) {
      if (ec) return on_watch_end();
      MessageType type;
      uint32_t bytes = 0;
      parse_header(header.data(), &type, &bytes);
      if (bytes > kMaxPayloadBytes) return on_watch_end();
      payload.resize(bytes);
      asio::async_read(socket, asio::buffer(payload), [this, type](
                                                          const boost::system::error_code& ec2,
                                                          size_t) {
        if (ec2) return on_watch_end();
        on_watch_message(type);
        watch_next();
      });
    });
  }

  void on_watch_message(MessageType type) {
    if (type == MessageType::Table) {
      TableMessage table;
      if (!parse_message(payload, &table)) {
        async->record_error(PLX_ERROR_INTERNAL,
                            fmt::format("{}: malformed table ({} bytes, expected {} entries)",
                                        prefix(), payload.size(), nranks));
      } else if (table.entries.size() != static_cast<size_t>(nranks)) {
        async->record_error(PLX_ERROR_INTERNAL,
                            fmt::format("{}: malformed table for round {} ({} entries, expected "
                                        "{})",
                                        prefix(), table.round, table.entries.size(), nranks));
      } else {
        std::lock_guard<std::mutex> lock(mutex);
        tables[table.round] = std::move(table.entries);
      }
    } else if (type == MessageType::Lost) {
      LostMessage lost;  // a malformed one still means a rank is lost
      parse_message(payload, &lost);
      log_message(LogLevel::Info, "rank {} lost ({})", lost.rank, lost.reason);
      async->record_error(PLX_ERROR_REMOTE, fmt::format("rank {} lost ({})", lost.rank,
                                                        lost.reason));
    } else if (type == MessageType::Error) {
      const ErrorMessage error = reported_error(payload);
      async->record_error(error.code, error.message);
    } else if (type == MessageType::AllDone) {
      std::lock_guard<std::mutex> lock(mutex);
      all_done = true;
    } else if (type == MessageType::CommAbort) {
      CommAbortMessage abort;
      std::shared_ptr<comm::AsyncState> target;
      if (parse_message(payload, &abort)) {
        std::lock_guard<std::mutex> lock(mutex);
        if (auto it = split_comms.find(abort.comm_id); it != split_comms.end()) {
          target = it->second.lock();
        }
      }
      if (target) {
        log_message(LogLevel::Info, "split communicator {:#x}: {}", abort.comm_id, abort.reason);
        target->record_peer_abort(abort.reason);
      }
    } else {
      log_message(LogLevel::Warn, "{}: unexpected {} from the root", prefix(),
                  message_type_name(type));
    }
    cv.notify_all();
  }

  // Watcher thread: queues a frame and writes the queue out in order.
  void send_frame(Bytes frame) {
    outbox.push_back(std::move(frame));
    if (!writing) flush();
  }

  void flush() {
    if (outbox.empty()) {
      if (close_when_sent) close_now();
      return;
    }
    writing = true;
    asio::async_write(socket, asio::buffer(outbox.front()),
                      [this](const boost::system::error_code& ec, size_t) {
                        writing = false;
                        if (ec) {
                          outbox.clear();
                          if (close_when_sent) close_now();
                          return;  // the pending read reports the broken connection
                        }
                        outbox.pop_front();
                        {
                          std::lock_guard<std::mutex> lock(mutex);
                          ++frames_written;
                        }
                        cv.notify_all();
                        flush();
                      });
  }

  // From any thread: hands a frame to the watcher.
  void post_frame(Bytes frame, bool then_close = false) {
    asio::post(io, [this, frame = std::move(frame), then_close]() mutable {
      if (then_close) close_when_sent = true;
      send_frame(std::move(frame));
    });
  }

  void on_watch_end() {
    boost::system::error_code ignored;
    socket.close(ignored);
    std::lock_guard<std::mutex> lock(mutex);
    disconnected = true;
    if (!closing && !all_done) {
      log_message(LogLevel::Info, "connection to the rendezvous root closed: rank 0 lost");
      async->record_error(PLX_ERROR_REMOTE,
                          "rank 0 lost (connection to the rendezvous root closed)");
    }
    cv.notify_all();
  }

  void close_now() {
    boost::system::error_code ignored;
    socket.shutdown(tcp::socket::shutdown_both, ignored);
    socket.close(ignored);
  }
};

RendezvousClient::RendezvousClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RendezvousClient::~RendezvousClient() { abort_now("failed while creating its communicator"); }

plx_result_t RendezvousClient::connect(const RendezvousAddress& address, int rank, int nranks,
                                       int timeout_ms, std::shared_ptr<comm::AsyncState> async,
                                       std::unique_ptr<RendezvousClient>* out) {
  auto impl = std::make_unique<Impl>();
  impl->address = address;
  impl->rank = rank;
  impl->nranks = nranks;
  impl->timeout_ms = timeout_ms;
  impl->async = std::move(async);
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  std::string why_retried;
  while (true) {
    PLX_CHECK(impl->connect_with_retry(deadline));
    boost::system::error_code ignored;
    impl->socket.set_option(tcp::no_delay(true), ignored);
    enable_keepalive(impl->socket.native_handle());
    bool retry = false;
    const plx_result_t result = impl->handshake(deadline, &retry);
    if (result == PLX_SUCCESS) break;
    if (!retry) return result;
    why_retried = last_error();
    log_message(LogLevel::Info, "{}: closed before the handshake ended; connecting again",
                impl->prefix());
    if (Clock::now() >= deadline) {
      return set_error(PLX_ERROR_TIMEOUT,
                       fmt::format("{}: no handshake within PLEXUS_TIMEOUT_MS={} ms (last: {})",
                                   impl->prefix(), timeout_ms, why_retried));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  log_message(LogLevel::Trace, "{}: connected", impl->prefix());
  // From here the watcher thread owns the socket: it files the setup tables, and a LOST or
  // ERROR from the root becomes the communicator's async error at once, so a rank that waits
  // on its transport during setup learns of a peer's failure without waiting out a timeout.
  Impl* s = impl.get();
  s->io.restart();
  s->watch_next();
  s->watcher = std::thread([s] { s->io.run(); });
  out->reset(new RendezvousClient(std::move(impl)));
  return PLX_SUCCESS;
}

plx_result_t RendezvousClient::allgather(uint32_t round, const Bytes& mine,
                                         std::vector<Bytes>* table) {
  Impl& s = *impl_;
  const auto deadline = Clock::now() + std::chrono::milliseconds(s.timeout_ms) +
                        std::chrono::seconds(1);
  s.post_frame(to_frame(ContributeMessage{round, mine}));
  std::unique_lock<std::mutex> lock(s.mutex);
  const bool answered = s.cv.wait_until(lock, deadline, [&] {
    return s.tables.count(round) != 0 || s.async->error() != PLX_SUCCESS || s.disconnected;
  });
  if (auto it = s.tables.find(round); it != s.tables.end()) {
    *table = std::move(it->second);
    s.tables.erase(it);
    return PLX_SUCCESS;
  }
  if (s.async->error() != PLX_SUCCESS) {
    return set_error(s.async->error(), fmt::format("rank {}: {}", s.rank, s.async->message()));
  }
  if (!answered) return s.read_timeout();
  return set_error(PLX_ERROR_REMOTE,
                   fmt::format("rank {}: rank 0 lost (connection to the rendezvous root closed "
                               "during setup)",
                               s.rank));
}

plx_result_t RendezvousClient::goodbye(const std::function<void()>& while_waiting) {
  Impl* s = impl_.get();
  if (!s->watcher.joinable()) return PLX_SUCCESS;
  s->post_frame(WireWriter().frame(MessageType::Goodbye));
  const auto deadline = Clock::now() + std::chrono::milliseconds(s->timeout_ms);
  bool all_done = false;
  bool timed_out = false;
  {
    const auto finished = [s] {
      return s->all_done || s->disconnected || s->async->error() != PLX_SUCCESS;
    };
    std::unique_lock<std::mutex> lock(s->mutex);
    while (!finished() && Clock::now() < deadline) {
      s->cv.wait_until(lock, std::min(deadline, Clock::now() + std::chrono::milliseconds(1)));
      lock.unlock();
      while_waiting();
      lock.lock();
    }
    timed_out = !finished();
    all_done = s->all_done;
    s->closing = true;
  }
  asio::post(s->io, [s] { s->close_now(); });
  s->watcher.join();
  if (all_done) return PLX_SUCCESS;
  if (s->async->error() != PLX_SUCCESS) {
    return set_error(s->async->error(), fmt::format("rank {}: {}", s->rank, s->async->message()));
  }
  if (timed_out) {
    return set_error(PLX_ERROR_TIMEOUT,
                     fmt::format("rank {}: not every rank called plx_comm_destroy within "
                                 "PLEXUS_TIMEOUT_MS={} ms",
                                 s->rank, s->timeout_ms));
  }
  return set_error(PLX_ERROR_REMOTE,
                   fmt::format("rank {}: rank 0 lost (connection to the rendezvous root closed "
                               "during shutdown)",
                               s->rank));
}

void RendezvousClient::watch_communicator(uint64_t comm_id,
                                          std::weak_ptr<comm::AsyncState> async) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->split_comms[comm_id] = std::move(async);
}

void RendezvousClient::forget_communicator(uint64_t comm_id) {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->split_comms.erase(comm_id);
}

void RendezvousClient::announce_abort(uint64_t comm_id, const std::string& reason) {
  Impl* s = impl_.get();
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    if (s->closing || s->disconnected || !s->watcher.joinable()) return;
  }
  Bytes frame = to_frame(CommAbortMessage{comm_id, reason.substr(0, kMaxErrorBytes / 2)});
  // Frames go out in order: ours is written when the count passes what was queued before it.
  auto target = std::make_shared<uint64_t>(UINT64_MAX);
  asio::post(s->io, [s, frame = std::move(frame), target]() mutable {
    {
      std::lock_guard<std::mutex> lock(s->mutex);
      *target = s->frames_written + s->outbox.size() + 1;
    }
    s->send_frame(std::move(frame));
  });
  std::unique_lock<std::mutex> lock(s->mutex);
  s->cv.wait_for(lock, std::chrono::seconds(1),
                 [&] { return s->frames_written >= *target || s->disconnected; });
}

void RendezvousClient::abort_now(const std::string& reason) {
  Impl* s = impl_.get();
  if (!s || !s->watcher.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->closing = true;
  }
  s->post_frame(to_frame(AbortMessage{reason.substr(0, kMaxErrorBytes / 2)}), /*then_close=*/true);
  s->watcher.join();
}

}  // namespace plexus::bootstrap
