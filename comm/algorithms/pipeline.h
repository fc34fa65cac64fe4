// pipeline.h - bounded windows of in-flight sends and receives for the pipelined algorithms.
//
// The ring allreduce and the chain broadcast cut their messages into slices and keep a few of
// them in flight: up to `send_depth` sends and `recv_depth` receives, each retired in the order
// it was posted (FIFO). A receive may land in a staging slot (slot = receive number % recv_depth)
// when the data must be reduced before use.
//
// Deadlock freedom. Messages on each link are numbered in an order both ends agree on; a rank
// posts receive u + recv_depth only after using receive u, and its sends become ready in number
// order. The algorithms follow one rule: before waiting for receive u, post every ready send
// numbered <= u (send() may first wait for the oldest send in flight, numbered below u). Then
// the lowest-numbered unfinished message can always complete: its send is posted by the rule,
// and its receive is posted because the receiver has used every older message.
//
// Pipeline::run() is that rule as one loop, for an algorithm that says how to post each numbered
// receive and send, when a send is ready, and what to do with a receive once it has landed. Most
// pipelined algorithms here are such a plan (the rings, the chain broadcast, block_exchange.h).
//
// Failure: if a wait fails, requests may still be posted in the transport, which keeps pointers
// to them and may still complete them into the staging slots. The destructor then leaks the
// request and staging storage on purpose rather than free memory the transport may write; the
// communicator is dead after such a failure anyway (see plexus.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

#include "comm/transport/transport.h"

namespace plexus::comm {

// What Pipeline::run() does on one rank: `recvs` receives and `sends` sends, each numbered in the
// order the two ends of its link agree on (receives and sends separately).
struct MessagePlan {
  size_t recvs = 0;       // waited for in number order
  size_t sends = 0;       // posted in number order
  size_t recv_ahead = 1;  // receives posted ahead (at most the Pipeline's recv_depth)
  // Post receive i / send m on the Pipeline (post_recv() / send()).
  std::function<plx_result_t(size_t i)> post_recv;
  std::function<plx_result_t(size_t m)> post_send;
  // Whether send m may be posted once `used` receives have been used (what it carries is here).
  // Asked in number order: send m goes only after every send before it.
  std::function<bool(size_t m, size_t used)> ready = [](size_t, size_t) { return true; };
  // The number of receive i in the order shared with its sender, where sends and receives of a
  // link are numbered alike: every ready send numbered <= number(i) goes before the wait for it.
  std::function<size_t(size_t i)> number = [](size_t i) { return i; };
  // Uses receive i once it has landed (combines it, say); sends it makes ready go afterwards.
  std::function<plx_result_t(size_t i)> use = [](size_t) { return PLX_SUCCESS; };
};

class Pipeline {
 public:
  Pipeline(Transport& transport, size_t send_depth, size_t recv_depth, size_t staging_bytes);
  ~Pipeline();
  Pipeline(const Pipeline&) = delete;
  Pipeline& operator=(const Pipeline&) = delete;

  // Posts a send of `bytes` bytes; first waits for the oldest send if send_depth are in flight.
  plx_result_t send(int peer, uint64_t tag, const void* buf, size_t bytes);
  // Sets *room when a send can be posted without waiting (retires finished sends; never blocks).
  plx_result_t send_has_room(bool* room);

  // Posts the next receive (at most recv_depth may be in flight).
  plx_result_t post_recv(int peer, uint64_t tag, void* buf, size_t bytes);
  // Waits for the oldest posted receive.
  plx_result_t wait_recv();
  // Staging slot of receive number `index` (index % recv_depth), staging_bytes long.
  unsigned char* staging(size_t index) {
    return staging_.get() + (index % recv_.depth) * staging_bytes_;
  }

  // Waits for every posted send and receive.
  plx_result_t finish();

  // Runs `plan` by the rule above: posts the first recv_ahead receives; for each receive i, in
  // order, posts every ready send numbered <= number(i) (send() may wait for window room) and
  // later ready ones while the window has room, waits for receive i, calls use(i) and posts
  // receive i + recv_ahead; at the end posts the remaining sends, which must all be ready by
  // then, and finish()es.
  plx_result_t run(const MessagePlan& plan);

 private:
  struct Fifo {
    std::unique_ptr<Request[]> slots;
    size_t depth = 0;
    size_t head = 0;  // slot of the oldest in-flight request
    size_t size = 0;  // requests in flight
    Request& oldest() { return slots[head]; }
    Request& next_free() { return slots[(head + size) % depth]; }
    void pop() {
      head = (head + 1) % depth;
      --size;
    }
  };
  plx_result_t wait_oldest(Fifo& fifo);

  Transport& transport_;
  Fifo send_;
  Fifo recv_;
  size_t staging_bytes_;
  std::unique_ptr<unsigned char[]> staging_;
};

// One send or one receive, waited for; the request is a Pipeline's, so a failed wait leaks it
// rather than free memory the transport may still write (see above).
plx_result_t send_one(Transport& transport, int peer, uint64_t tag, const void* buf, size_t bytes);
plx_result_t recv_one(Transport& transport, int peer, uint64_t tag, void* buf, size_t bytes);

}  // namespace plexus::comm
