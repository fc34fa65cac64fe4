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
// Failure: if a wait fails, requests may still be posted in the transport, which keeps pointers
// to them and may still complete them into the staging slots. The destructor then leaks the
// request and staging storage on purpose rather than free memory the transport may write; the
// communicator is dead after such a failure anyway (see plexus.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "comm/transport/transport.h"

namespace plexus::comm {

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

}  // namespace plexus::comm
