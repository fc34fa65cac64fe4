// rendezvous_client.cpp - a rank's side of the rendezvous and liveness channel.
//
// Setup (connect, HELLO, allgather rounds) runs on the caller's thread with deadlines; after
// start_watching() the socket belongs to the watcher thread, and goodbye()/abort_now() reach it
// by posting work to its io_context.
#include "comm/bootstrap/rendezvous_client.h"

#include <fmt/format.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <utility>  // before Asio: Boost 1.74 awaitable.hpp uses std::exchange
#include <boost/asio.hpp>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "comm/core/error.h"
#include "comm/core/log.h"

namespace plexus::bootstrap {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {

// Lets the kernel notice a vanished host (not just a dead process) on an idle connection.
void enable_keepalive(tcp::socket& socket) {
  const int fd = socket.native_handle();
  int on = 1, idle_s = 10, interval_s = 5, probes = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof(idle_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval_s, sizeof(interval_s));
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof(probes));
}

}  // namespace

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
  Bytes goodbye_frame;
  Bytes abort_frame;
  std::mutex mutex;
  std::condition_variable cv;
  bool all_done = false;
  bool disconnected = false;
  bool closing = false;  // we are closing on purpose: a dropped connection is not a loss

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

  plx_result_t read_frame(MessageType* type, Bytes* out, Clock::time_point deadline) {
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
      if (bytes > kMaxPayloadBytes) {
        return set_error(PLX_ERROR_INTERNAL, fmt::format("{}: message of {} bytes from the root "
                                                         "exceeds {}", prefix(), bytes,
                                                         kMaxPayloadBytes));
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
      return set_error(PLX_ERROR_REMOTE,
                       fmt::format("{}: rank 0 lost (connection to the rendezvous root closed: {})",
                                   prefix(), ec.message()));
    }
    return PLX_SUCCESS;
  }

  plx_result_t read_timeout() {
    return set_error(PLX_ERROR_TIMEOUT,
                     fmt::format("{}: not every rank joined within PLEXUS_TIMEOUT_MS={} ms",
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
    WireReader in(payload);
    if (type == MessageType::Lost) {
      const int lost_rank = in.i32();
      const std::string reason = in.text();
      log_message(LogLevel::Info, "rank {} lost ({})", lost_rank, reason);
      async->record_error(PLX_ERROR_REMOTE, fmt::format("rank {} lost ({})", lost_rank, reason));
    } else if (type == MessageType::Error) {
      const auto code = static_cast<plx_result_t>(in.u32());
      async->record_error(code, in.text());
    } else if (type == MessageType::AllDone) {
      std::lock_guard<std::mutex> lock(mutex);
      all_done = true;
    }
    cv.notify_all();
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
  PLX_CHECK(impl->connect_with_retry(deadline));
  boost::system::error_code ignored;
  impl->socket.set_option(tcp::no_delay(true), ignored);
  enable_keepalive(impl->socket);
  WireWriter hello;
  hello.u32(kWireVersion).u64(address.nonce).i32(rank).i32(nranks);
  PLX_CHECK(impl->write_frame(hello.frame(MessageType::Hello), deadline));
  log_message(LogLevel::Trace, "{}: connected", impl->prefix());
  out->reset(new RendezvousClient(std::move(impl)));
  return PLX_SUCCESS;
}

plx_result_t RendezvousClient::allgather(uint32_t round, const Bytes& mine,
                                         std::vector<Bytes>* table) {
  Impl& s = *impl_;
  const auto deadline = Clock::now() + std::chrono::milliseconds(s.timeout_ms) +
                        std::chrono::seconds(1);
  WireWriter contribution;
  contribution.u32(round).bytes(mine);
  PLX_CHECK(s.write_frame(contribution.frame(MessageType::Contribute), deadline));
  while (true) {
    MessageType type;
    Bytes payload;
    PLX_CHECK(s.read_frame(&type, &payload, deadline));
    WireReader in(payload);
    switch (type) {
      case MessageType::Table: {
        const uint32_t their_round = in.u32();
        const uint32_t n = in.u32();
        std::vector<Bytes> entries;
        for (uint32_t i = 0; i < n && in.ok(); ++i) entries.push_back(in.bytes());
        if (!in.ok() || their_round != round || n != static_cast<uint32_t>(s.nranks)) {
          return set_error(PLX_ERROR_INTERNAL,
                           fmt::format("{}: malformed table for round {} (got round {}, {} "
                                       "entries, expected {})",
                                       s.prefix(), round, their_round, n, s.nranks));
        }
        *table = std::move(entries);
        return PLX_SUCCESS;
      }
      case MessageType::Error: {
        const auto code = static_cast<plx_result_t>(in.u32());
        const std::string message = in.text();
        return set_error(code == PLX_SUCCESS ? PLX_ERROR_INTERNAL : code,
                         fmt::format("rank {}: {}", s.rank, message));
      }
      case MessageType::Lost: {
        const int lost_rank = in.i32();
        const std::string reason = in.text();
        return set_error(PLX_ERROR_REMOTE,
                         fmt::format("rank {}: rank {} lost during the rendezvous ({})", s.rank,
                                     lost_rank, reason));
      }
      default:
        log_message(LogLevel::Warn, "{}: unexpected {} during setup", s.prefix(),
                    message_type_name(type));
        break;
    }
  }
}

void RendezvousClient::start_watching() {
  Impl* s = impl_.get();
  s->io.restart();
  s->watch_next();
  s->watcher = std::thread([s] { s->io.run(); });
}

plx_result_t RendezvousClient::goodbye(const std::function<void()>& while_waiting) {
  Impl* s = impl_.get();
  if (!s->watcher.joinable()) return PLX_SUCCESS;
  s->goodbye_frame = WireWriter().frame(MessageType::Goodbye);
  asio::post(s->io, [s] {
    asio::async_write(s->socket, asio::buffer(s->goodbye_frame),
                      [](const boost::system::error_code&, size_t) {});
  });
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

void RendezvousClient::abort_now(const std::string& reason) {
  Impl* s = impl_.get();
  if (!s) return;
  if (!s->watcher.joinable()) {
    if (!s->socket.is_open()) return;
    // Still in setup: the socket is ours; say why, without waiting long.
    WireWriter why;
    why.text(reason);
    const Bytes frame = why.frame(MessageType::Abort);
    boost::system::error_code ignored;
    s->socket.non_blocking(true, ignored);
    s->socket.write_some(asio::buffer(frame), ignored);
    s->close_now();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(s->mutex);
    s->closing = true;
  }
  WireWriter why;
  why.text(reason);
  s->abort_frame = why.frame(MessageType::Abort);
  asio::post(s->io, [s] {
    asio::async_write(s->socket, asio::buffer(s->abort_frame),
                      [s](const boost::system::error_code&, size_t) { s->close_now(); });
  });
  s->watcher.join();
}

}  // namespace plexus::bootstrap
