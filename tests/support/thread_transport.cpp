// thread_transport.cpp - see thread_transport.h.
#include "tests/support/thread_transport.h"

#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <list>
#include <mutex>
#include <thread>

#include "comm/base/error.h"

namespace plexus::test {

namespace {

struct PendingSend {
  int src;
  uint64_t tag;
  const void* buf;                  // rendezvous: read when matched
  std::vector<unsigned char> data;  // eager: copied at post time
  size_t bytes;
  comm::Request* req;  // null once an eager send has completed
};

struct PostedRecv {
  int src;
  uint64_t tag;
  void* buf;
  size_t bytes;
  comm::Request* req;
};

std::string describe(const char* what, int rank, int peer, uint64_t tag, size_t bytes) {
  return std::string(what) + " rank " + std::to_string(rank) + " peer " + std::to_string(peer) +
         " tag 0x" +
         [&] {
           char hex[32];
           std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(tag));
           return std::string(hex);
         }() +
         " bytes " + std::to_string(bytes);
}

}  // namespace

class ThreadFabric {
 public:
  ThreadFabric(int n, size_t eager_bytes, std::chrono::milliseconds timeout)
      : n_(n), eager_bytes_(eager_bytes), timeout_(timeout), ranks_(n) {}

  // Marks a request as posted and not yet complete.
  static void start(comm::Request& req, int peer, size_t bytes) {
    req.done = false;
    req.result = PLX_SUCCESS;
    req.peer = peer;
    req.bytes = bytes;
  }

  plx_result_t post_send(int me, int peer, uint64_t tag, const void* buf, size_t bytes,
                         comm::Request& req) {
    std::lock_guard<std::mutex> lock(mu_);
    start(req, peer, bytes);
    if (peer < 0 || peer >= n_) return bad_peer("post_send", me, peer);
    Rank& dst = ranks_[peer];
    for (auto it = dst.posted.begin(); it != dst.posted.end(); ++it) {
      if (it->src != me || it->tag != tag) continue;
      deliver(*it, buf, bytes, &req, me, peer, tag);
      dst.posted.erase(it);
      apply_completions(me);
      return PLX_SUCCESS;
    }
    for (const PendingSend& p : dst.unexpected) {
      if (p.src == me && p.tag == tag) {
        errors_.push_back(describe("duplicate send from", me, peer, tag, bytes));
      }
    }
    PendingSend pending{me, tag, buf, {}, bytes, &req};
    if (bytes < eager_bytes_) {
      const auto* p = static_cast<const unsigned char*>(buf);
      pending.data.assign(p, p + bytes);
      pending.buf = nullptr;
      pending.req = nullptr;
      complete(req, me, PLX_SUCCESS);
    }
    dst.unexpected.push_back(std::move(pending));
    apply_completions(me);
    return PLX_SUCCESS;
  }

  plx_result_t post_recv(int me, int peer, uint64_t tag, void* buf, size_t bytes,
                         comm::Request& req) {
    std::lock_guard<std::mutex> lock(mu_);
    start(req, peer, bytes);
    if (peer < 0 || peer >= n_) return bad_peer("post_recv", me, peer);
    Rank& self = ranks_[me];
    PostedRecv recv{peer, tag, buf, bytes, &req};
    for (auto it = self.unexpected.begin(); it != self.unexpected.end(); ++it) {
      if (it->src != peer || it->tag != tag) continue;
      const void* src = it->req ? it->buf : it->data.data();
      deliver(recv, src, it->bytes, it->req, peer, me, tag);
      self.unexpected.erase(it);
      apply_completions(me);
      return PLX_SUCCESS;
    }
    for (const PostedRecv& p : self.posted) {
      if (p.src == peer && p.tag == tag) {
        errors_.push_back(describe("duplicate receive at", me, peer, tag, bytes));
      }
    }
    self.posted.push_back(recv);
    return PLX_SUCCESS;
  }

  plx_result_t wait_all(int me, comm::Request* const* reqs, size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto all_done = [&] {
      apply_completions(me);
      for (size_t i = 0; i < n; ++i) {
        if (!reqs[i]->done) return false;
      }
      return true;
    };
    if (!ranks_[me].cv.wait_for(lock, timeout_, all_done)) {
      for (size_t i = 0; i < n; ++i) {
        if (reqs[i]->done) continue;
        return set_error(PLX_ERROR_TIMEOUT, "thread transport wait_all: rank " +
                                                std::to_string(me) + ": no completion from peer " +
                                                std::to_string(reqs[i]->peer) + " within " +
                                                std::to_string(timeout_.count()) + " ms");
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (reqs[i]->result != PLX_SUCCESS) {
        return set_error(reqs[i]->result, "thread transport wait_all: rank " + std::to_string(me) +
                                              ": request with peer " +
                                              std::to_string(reqs[i]->peer) +
                                              " failed (see protocol_errors)");
      }
    }
    return PLX_SUCCESS;
  }

  plx_result_t test(int me, comm::Request& req, bool* done) {
    std::lock_guard<std::mutex> lock(mu_);
    apply_completions(me);
    *done = req.done;
    if (req.done && req.result != PLX_SUCCESS) {
      return set_error(req.result, "thread transport test: rank " + std::to_string(me) +
                                       ": request with peer " + std::to_string(req.peer) +
                                       " failed");
    }
    return PLX_SUCCESS;
  }

  // One progress pass of rank `me`: the completions other ranks made become visible.
  void progress(int me) {
    std::lock_guard<std::mutex> lock(mu_);
    apply_completions(me);
  }

  std::vector<std::string> errors() const {
    std::lock_guard<std::mutex> lock(mu_);
    return errors_;
  }

  std::vector<std::string> leftover() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (int r = 0; r < n_; ++r) {
      for (const auto& s : ranks_[r].unexpected) {
        out.push_back(describe("unreceived send to", r, s.src, s.tag, s.bytes));
      }
      for (const auto& p : ranks_[r].posted) {
        out.push_back(describe("unmatched receive at", r, p.src, p.tag, p.bytes));
      }
    }
    return out;
  }

 private:
  struct Completion {
    comm::Request* req;
    plx_result_t result;
  };

  struct Rank {
    std::list<PendingSend> unexpected;  // sends to this rank not yet matched
    std::list<PostedRecv> posted;       // receives of this rank not yet matched
    std::vector<Completion> completed;  // not yet seen by the rank (apply_completions)
    std::condition_variable cv;
  };

  // Copies a matched message and completes both sides. Called with mu_ held.
  void deliver(const PostedRecv& recv, const void* src, size_t bytes, comm::Request* send_req,
               int from, int to, uint64_t tag) {
    plx_result_t result = PLX_SUCCESS;
    if (bytes != recv.bytes) {
      errors_.push_back(describe("size mismatch: send", from, to, tag, bytes) +
                        " but receive bytes " + std::to_string(recv.bytes));
      result = PLX_ERROR_INTERNAL;
    } else if (bytes > 0) {
      std::memcpy(recv.buf, src, bytes);
    }
    complete(*recv.req, to, result);
    if (send_req) complete(*send_req, from, result);
  }

  // Completes a request of rank `owner`, whichever thread matched it. As on a real transport,
  // the rank sees it (done, result) only in its own next call (post, test, wait_all, poll_once):
  // algorithms read Request::done after such a call, on their own thread, without a lock.
  // Called with mu_ held.
  void complete(comm::Request& req, int owner, plx_result_t result) {
    ranks_[owner].completed.push_back({&req, result});
    ranks_[owner].cv.notify_all();
  }

  // Called with mu_ held, on rank `me`'s thread.
  void apply_completions(int me) {
    for (const Completion& c : ranks_[me].completed) {
      c.req->result = c.result;
      c.req->done = true;
    }
    ranks_[me].completed.clear();
  }

  plx_result_t bad_peer(const char* op, int me, int peer) {
    errors_.push_back(std::string(op) + ": rank " + std::to_string(me) + ": peer " +
                      std::to_string(peer) + " not in 0.." + std::to_string(n_ - 1));
    return set_error(PLX_ERROR_INVALID_ARGUMENT, errors_.back());
  }

  const int n_;
  const size_t eager_bytes_;
  const std::chrono::milliseconds timeout_;
  mutable std::mutex mu_;
  std::vector<Rank> ranks_;
  std::vector<std::string> errors_;
};

namespace {

class ThreadTransport final : public comm::Transport {
 public:
  ThreadTransport(ThreadFabric& fabric, int rank, int size)
      : fabric_(fabric), rank_(rank), size_(size) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "thread"; }
  plx_result_t post_send(int peer, uint64_t tag, const void* buf, size_t bytes,
                         comm::Request& req) override {
    return fabric_.post_send(rank_, peer, tag, buf, bytes, req);
  }
  plx_result_t post_recv(int peer, uint64_t tag, void* buf, size_t bytes,
                         comm::Request& req) override {
    return fabric_.post_recv(rank_, peer, tag, buf, bytes, req);
  }
  plx_result_t wait_all(comm::Request* const* reqs, size_t n) override {
    return fabric_.wait_all(rank_, reqs, n);
  }
  const std::vector<uint8_t>& local_address() const override { return address_; }
  plx_result_t connect(const std::vector<std::vector<uint8_t>>&) override { return PLX_SUCCESS; }
  void poll_once() override { fabric_.progress(rank_); }
  plx_result_t open_sibling(int, int, int, std::shared_ptr<comm::AsyncState>,
                            std::unique_ptr<comm::Transport>*) const override {
    return PLX_ERROR_UNSUPPORTED;
  }
  plx_result_t test(comm::Request& req, bool* done) override {
    return fabric_.test(rank_, req, done);
  }

 private:
  ThreadFabric& fabric_;
  int rank_;
  int size_;
  std::vector<uint8_t> address_;
};

}  // namespace

ThreadWorld::ThreadWorld(int nranks, size_t eager_bytes, std::chrono::milliseconds timeout)
    : fabric_(std::make_unique<ThreadFabric>(nranks, eager_bytes, timeout)) {
  for (int r = 0; r < nranks; ++r) {
    transports_.push_back(std::make_unique<ThreadTransport>(*fabric_, r, nranks));
  }
}

ThreadWorld::~ThreadWorld() = default;

int ThreadWorld::size() const { return static_cast<int>(transports_.size()); }

comm::Transport& ThreadWorld::transport(int rank) { return *transports_.at(rank); }

std::vector<plx_result_t> ThreadWorld::run(
    const std::function<plx_result_t(int rank, comm::Transport& transport)>& body) {
  std::vector<plx_result_t> results(transports_.size(), PLX_ERROR_INTERNAL);
  std::vector<std::thread> threads;
  for (int r = 0; r < size(); ++r) {
    threads.emplace_back([&, r] { results[r] = body(r, *transports_[r]); });
  }
  for (auto& t : threads) t.join();
  return results;
}

std::vector<std::string> ThreadWorld::protocol_errors() const { return fabric_->errors(); }

std::vector<std::string> ThreadWorld::leftover() const { return fabric_->leftover(); }

}  // namespace plexus::test
