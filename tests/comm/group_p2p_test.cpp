// group_p2p_test.cpp - plx_send/plx_recv and plx_group_start/plx_group_end on real ranks over
// libfabric tcp and shm and over UCX.
//
// Every message carries a closed-form payload naming its sender, its number and the index, so a
// message landing in the wrong receive is caught: a ring exchange in a group (both directions at
// once), sends to oneself, the messages of one pair matched in posting order (blocking against
// non-blocking, and in one group), many sends then many receives to every rank in one group,
// messages of tens of MiB, a group spanning two communicators (with collectives in it),
// non-blocking exchanges outside any group (both directions at once, and around a collective),
// blocking
// pairs outside any group, argument errors with their exact messages (inside and outside a
// group), plx_wait on a request of the still open group, nested groups, and plx_group_end
// without a start.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

// Element i of message number k from `sender`.
int32_t payload(int sender, int k, size_t i) {
  return sender * 1000000 + k * 1000 + static_cast<int32_t>(i % 1000);
}

std::vector<int32_t> message(int sender, int k, size_t count) {
  std::vector<int32_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = payload(sender, k, i);
  return out;
}

// "" when got holds message k from sender, else the first wrong index.
std::string check_message(const std::vector<int32_t>& got, int sender, int k, size_t count,
                          const std::string& what) {
  if (got.size() < count) return what + ": buffer too small";
  for (size_t i = 0; i < count; ++i) {
    if (got[i] != payload(sender, k, i)) {
      return what + ": message " + std::to_string(k) + " from rank " + std::to_string(sender) +
             ", index " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(payload(sender, k, i));
    }
  }
  return "";
}

// Runs `queue` between plx_group_start and plx_group_end; the first failure, or "".
std::string in_group(const std::string& what, const std::function<std::string()>& queue) {
  if (plx_group_start() != PLX_SUCCESS) return what + ": plx_group_start: " + last_error_text();
  const std::string queued = queue();
  const plx_result_t ended = plx_group_end();
  if (!queued.empty()) return what + ": " + queued;
  return expect_success(ended, what + ": plx_group_end");
}

std::string send(const std::vector<int32_t>& buf, size_t count, int peer, plx_comm_t comm) {
  return expect_success(plx_send(buf.data(), count, PLX_INT32, peer, comm, nullptr),
                        "plx_send to " + std::to_string(peer));
}

std::string recv(std::vector<int32_t>* buf, size_t count, int peer, plx_comm_t comm) {
  return expect_success(plx_recv(buf->data(), count, PLX_INT32, peer, comm, nullptr),
                        "plx_recv from " + std::to_string(peer));
}

class GroupP2PTest : public RankCaseTest {};

// A ring exchange in both directions with a message to itself, in groups; empty messages.
std::string ring_and_self(plx_comm_t world, int rank, int n) {
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  for (int k = 0; k < 6; ++k) {
    const size_t count = 1 + 4099 * static_cast<size_t>(k);
    const std::vector<int32_t> to_right = message(rank, 2 * k, count);
    const std::vector<int32_t> to_left = message(rank, 2 * k + 1, count);
    const std::vector<int32_t> to_self = message(rank, 100 + k, count);
    std::vector<int32_t> from_left(count, -1), from_right(count, -1), from_self(count, -1);
    // Receives first, in the other order: a group posts everything before waiting.
    if (auto why = in_group(
            "ring " + std::to_string(k),
            [&]() -> std::string {
              for (auto why :
                   {recv(&from_self, count, rank, world), recv(&from_right, count, right, world),
                    recv(&from_left, count, left, world), send(to_right, count, right, world),
                    send(to_left, count, left, world), send(to_self, count, rank, world)}) {
                if (!why.empty()) return why;
              }
              return "";
            });
        !why.empty()) {
      return why;
    }
    // With two ranks, left == right: the first message between them matches the first
    // receive (so from_right gets the neighbour's "to right" message).
    const int right_k = n == 2 ? 2 * k : 2 * k + 1;
    const int left_k = n == 2 ? 2 * k + 1 : 2 * k;
    for (auto why : {check_message(from_left, left, left_k, count, "from the left"),
                     check_message(from_right, right, right_k, count, "from the right"),
                     check_message(from_self, rank, 100 + k, count, "from itself")}) {
      if (!why.empty()) return why;
    }
  }
  // count 0 to itself, NULL buffers allowed.
  if (auto why =
          in_group("empty messages",
                   [&]() -> std::string {
                     if (auto why = expect_success(
                             plx_send(nullptr, 0, PLX_FLOAT32, rank, world, nullptr), "send 0");
                         !why.empty()) {
                       return why;
                     }
                     return expect_success(plx_recv(nullptr, 0, PLX_FLOAT32, rank, world, nullptr),
                                           "recv 0");
                   });
      !why.empty()) {
    return why;
  }
  return "";
}

// Ranks 2j and 2j+1 are partners; with an odd n the last rank is its own partner.
int partner(int rank, int n) { return (rank ^ 1) < n ? (rank ^ 1) : rank; }

// The messages of a pair match in posting order: blocking sends against posted receives, then
// many sends then many receives in one group, both ways.
std::string pair_in_order(plx_comm_t world, int rank, int n) {
  const int peer = partner(rank, n);
  constexpr int kMessages = 40;
  const auto length_of = [](int k) { return static_cast<size_t>(1 + (k * 3571) % 20000); };
  std::vector<std::vector<int32_t>> out(kMessages), in(kMessages);
  for (int k = 0; k < kMessages; ++k) {
    out[k] = message(rank, k, length_of(k));
    in[k].assign(20001, -1);
  }
  // 1. The lower rank sends blocking; the higher one posts every receive, then waits.
  //    (A rank that is its own partner does both in one group.)
  if (peer == rank) {
    if (auto why =
            in_group("self",
                     [&]() -> std::string {
                       for (int k = 0; k < kMessages; ++k) {
                         if (auto why = send(out[k], length_of(k), rank, world); !why.empty()) {
                           return why;
                         }
                         if (auto why = recv(&in[k], length_of(k), rank, world); !why.empty()) {
                           return why;
                         }
                       }
                       return "";
                     });
        !why.empty()) {
      return why;
    }
  } else if (rank < peer) {
    for (int k = 0; k < kMessages; ++k) {
      if (auto why = send(out[k], length_of(k), peer, world); !why.empty()) return why;
    }
  } else {
    std::vector<plx_request_t> requests(kMessages);
    for (int k = 0; k < kMessages; ++k) {
      if (auto why = expect_success(
              plx_irecv(in[k].data(), length_of(k), PLX_INT32, peer, world, &requests[k]),
              "plx_irecv");
          !why.empty()) {
        return why;
      }
    }
    for (plx_request_t request : requests) {
      if (auto why = expect_success(plx_wait(request), "plx_wait"); !why.empty()) return why;
    }
  }
  if (rank >= peer) {
    for (int k = 0; k < kMessages; ++k) {
      if (auto why = check_message(in[k], peer, k, length_of(k), "in order"); !why.empty()) {
        return why;
      }
      in[k].assign(20001, -1);
    }
  }
  // 2. Both ways at once in one group: all sends, then all receives.
  if (auto why =
          in_group("many sends then many receives",
                   [&]() -> std::string {
                     for (int k = 0; k < kMessages; ++k) {
                       if (auto why = send(out[k], length_of(k), peer, world); !why.empty()) {
                         return why;
                       }
                     }
                     for (int k = 0; k < kMessages; ++k) {
                       if (auto why = recv(&in[k], length_of(k), peer, world); !why.empty()) {
                         return why;
                       }
                     }
                     return "";
                   });
      !why.empty()) {
    return why;
  }
  for (int k = 0; k < kMessages; ++k) {
    if (auto why = check_message(in[k], peer, k, length_of(k), "grouped"); !why.empty()) {
      return why;
    }
  }
  return "";
}

// Many sends then many receives with every rank (itself included), all in one group.
std::string many_with_every_rank(plx_comm_t world, int rank, int n) {
  constexpr int kPerPeer = 12;
  // Message k to peer p: count depends on (k, p); some pass 64 KiB.
  const auto length_of = [](int k, int to) {
    return static_cast<size_t>(k % 4 == 3 ? 20000 + 7 * to : 1 + 13 * k + to);
  };
  std::vector<std::vector<int32_t>> out, in;
  if (auto why = in_group(
          "all to all",
          [&]() -> std::string {
            out.reserve(static_cast<size_t>(kPerPeer) * n);
            in.reserve(static_cast<size_t>(kPerPeer) * n);
            for (int p = 0; p < n; ++p) {
              for (int k = 0; k < kPerPeer; ++k) {
                out.push_back(message(rank, k + 50 * p, length_of(k, p)));
                if (auto why = send(out.back(), out.back().size(), p, world); !why.empty()) {
                  return why;
                }
              }
            }
            for (int p = n - 1; p >= 0; --p) {
              for (int k = 0; k < kPerPeer; ++k) {
                in.emplace_back(length_of(k, rank), -1);
                if (auto why = recv(&in.back(), in.back().size(), p, world); !why.empty()) {
                  return why;
                }
              }
            }
            return "";
          });
      !why.empty()) {
    return why;
  }
  size_t index = 0;
  for (int p = n - 1; p >= 0; --p) {
    for (int k = 0; k < kPerPeer; ++k) {
      if (auto why = check_message(in[index++], p, k + 50 * rank, length_of(k, rank), "a2a");
          !why.empty()) {
        return why;
      }
    }
  }
  return "";
}

// A ring of 24 MiB messages in a group, then blocking pairs outside any group.
std::string large_and_blocking_pairs(plx_comm_t world, int rank, int n) {
  // 1. A ring of 24 MiB + 56 bytes float64 messages, in a group.
  const size_t count = (size_t{3} << 20) + 7;
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  std::vector<double> out(count), in(count, -1.0);
  for (size_t i = 0; i < count; ++i) out[i] = rank * 1e7 + static_cast<double>(i);
  if (auto why = in_group(
          "large ring",
          [&]() -> std::string {
            if (auto why = expect_success(
                    plx_send(out.data(), count, PLX_FLOAT64, right, world, nullptr), "send");
                !why.empty()) {
              return why;
            }
            return expect_success(plx_recv(in.data(), count, PLX_FLOAT64, left, world, nullptr),
                                  "recv");
          });
      !why.empty()) {
    return why;
  }
  for (size_t i = 0; i < count; ++i) {
    if (in[i] != left * 1e7 + static_cast<double>(i)) {
      return "large ring: index " + std::to_string(i) + " is " + std::to_string(in[i]);
    }
  }
  // 2. Blocking pairs outside a group: the even partner sends first, the odd one receives
  // first (an unpaired last rank sits this out). Small, 1 MiB and 24 MiB messages.
  const int peer = partner(rank, n);
  if (peer != rank) {
    int k = 0;
    for (size_t size : {size_t{1}, size_t{1} << 18, (size_t{6} << 20) + 3}) {
      const std::vector<int32_t> mine = message(rank, k, size);
      std::vector<int32_t> theirs(size, -1);
      const bool first = rank % 2 == 0;
      for (int turn = 0; turn < 2; ++turn) {
        const std::string why =
            (turn == 0) == first ? send(mine, size, peer, world) : recv(&theirs, size, peer, world);
        if (!why.empty()) return "blocking pair: " + why;
      }
      if (auto why = check_message(theirs, peer, k, size, "blocking pair"); !why.empty()) {
        return why;
      }
      ++k;
    }
  }
  return "";
}

// One group with sends, receives and collectives on the world and on a split child.
std::string spanning_two_communicators(plx_comm_t world, int rank, int n) {
  // The child: world ranks of my parity, in reverse order.
  OwnedComm child;
  if (auto why =
          expect_success(plx_comm_split(world, rank % 2, -rank, child.out()), "plx_comm_split");
      !why.empty()) {
    return why;
  }
  std::vector<int> members;
  for (int r = n - 1; r >= 0; --r) {
    if (r % 2 == rank % 2) members.push_back(r);
  }
  const int m = static_cast<int>(members.size());
  const int c = static_cast<int>(std::find(members.begin(), members.end(), rank) - members.begin());
  const size_t count = 5000;
  const std::vector<int32_t> world_out = message(rank, 1, count);
  const std::vector<int32_t> child_out = message(rank, 2, count);
  std::vector<int32_t> world_in(count, -1), child_in(count, -1);
  int64_t world_value = rank + 1, world_sum = -1, child_value = rank + 1, child_sum = -1;
  plx_request_t child_send = nullptr;
  // World: a ring to the right; child: a ring to the left (in child ranks); one allreduce on
  // each; all in one group, so the communicators' work runs concurrently.
  if (auto why = in_group(
          "two communicators",
          [&]() -> std::string {
            for (auto why : {send(world_out, count, (rank + 1) % n, world),
                             expect_success(plx_allreduce(&child_value, &child_sum, 1, PLX_INT64,
                                                          PLX_SUM, child.get(), nullptr),
                                            "child allreduce"),
                             recv(&world_in, count, (rank + n - 1) % n, world),
                             expect_success(plx_isend(child_out.data(), count, PLX_INT32,
                                                      (c + m - 1) % m, child.get(), &child_send),
                                            "child isend"),
                             expect_success(plx_allreduce(&world_value, &world_sum, 1, PLX_INT64,
                                                          PLX_SUM, world, nullptr),
                                            "world allreduce"),
                             recv(&child_in, count, (c + 1) % m, child.get())}) {
              if (!why.empty()) return why;
            }
            return "";
          });
      !why.empty()) {
    return why;
  }
  // The non-blocking send finished with its group.
  if (auto why = expect_success(plx_wait(child_send), "plx_wait on the group's isend");
      !why.empty()) {
    return why;
  }
  if (auto why = check_message(world_in, (rank + n - 1) % n, 1, count, "world ring");
      !why.empty()) {
    return why;
  }
  if (auto why = check_message(child_in, members[(c + 1) % m], 2, count, "child ring");
      !why.empty()) {
    return why;
  }
  int64_t child_expected = 0;
  for (int w : members) child_expected += w + 1;
  if (world_sum != int64_t{n} * (n + 1) / 2 || child_sum != child_expected) {
    return "allreduce in the group: world " + std::to_string(world_sum) + ", child " +
           std::to_string(child_sum);
  }
  if (auto why = child.destroy("child"); !why.empty()) return why;
  return "";
}

// Argument errors with exact messages, in and out of a group; the open group's requests;
// nested groups; plx_group_end without a start.
std::string errors_and_open_group(plx_comm_t world, int rank, int n) {
  plx_comm_t comm = world;
  const std::string r = "rank " + std::to_string(rank) + ": ";
  const std::string range = " not in 0.." + std::to_string(n - 1);
  int32_t data[3] = {1, 2, 3};
  plx_request_t untouched = reinterpret_cast<plx_request_t>(uintptr_t{0x5eed});
  plx_request_t request = untouched;
  // Each call runs and is checked on its own (the last error is the latest call's).
  struct Case {
    std::function<plx_result_t()> call;
    plx_result_t code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[&] { return plx_send(data, 3, PLX_INT32, n, comm, nullptr); }, PLX_ERROR_INVALID_ARGUMENT,
       "plx_send: " + r + "peer " + std::to_string(n) + range},
      {[&] { return plx_recv(data, 3, PLX_INT32, -1, comm, nullptr); }, PLX_ERROR_INVALID_ARGUMENT,
       "plx_recv: " + r + "peer -1" + range},
      {[&] { return plx_send(nullptr, 3, PLX_INT32, 0, comm, nullptr); },
       PLX_ERROR_INVALID_ARGUMENT, "plx_send: " + r + "sendbuf is NULL with count 3"},
      {[&] { return plx_recv(nullptr, 3, PLX_INT32, 0, comm, nullptr); },
       PLX_ERROR_INVALID_ARGUMENT, "plx_recv: " + r + "recvbuf is NULL with count 3"},
      {[&] { return plx_isend(data, 3, static_cast<plx_datatype_t>(42), 0, comm, &request); },
       PLX_ERROR_INVALID_ARGUMENT, "plx_isend: " + r + "datatype 42 not in 0..9"},
      {[&] { return plx_irecv(data, 3, PLX_INT32, n + 3, comm, &request); },
       PLX_ERROR_INVALID_ARGUMENT, "plx_irecv: " + r + "peer " + std::to_string(n + 3) + range},
      {[&] { return plx_irecv(data, 3, PLX_INT32, 0, comm, nullptr); }, PLX_ERROR_INVALID_ARGUMENT,
       "plx_irecv: " + r + "request is NULL"},
      {[&] { return plx_send(data, 3, PLX_INT32, 0, nullptr, nullptr); },
       PLX_ERROR_INVALID_ARGUMENT, "plx_send: comm is NULL"},
  };
  const auto run_cases = [&](const std::string& where) -> std::string {
    for (size_t i = 0; i < cases.size(); ++i) {
      if (auto why = expect_failure(cases[i].call(), cases[i].code, cases[i].message);
          !why.empty()) {
        return where + " case " + std::to_string(i) + ": " + why;
      }
    }
    return request == untouched ? "" : where + ": request written by a failed call";
  };
  // 1. Outside a group, then inside one, where the valid calls around them still run and no
  // failed call used up a message number.
  if (auto why = run_cases("outside a group"); !why.empty()) return why;
  const std::vector<int32_t> out = message(rank, 7, 3);
  std::vector<int32_t> in(3, -1);
  if (auto why = in_group(
          "errors in a group",
          [&]() -> std::string {
            if (auto why = send(out, 3, rank, comm); !why.empty()) return why;
            if (auto why = run_cases("inside a group"); !why.empty()) return why;
            if (auto why = expect_failure(plx_comm_destroy(comm), PLX_ERROR_INVALID_USAGE,
                                          "plx_comm_destroy: " + r + "called inside a group");
                !why.empty()) {
              return why;
            }
            if (auto why = expect_failure(plx_comm_abort(comm), PLX_ERROR_INVALID_USAGE,
                                          "plx_comm_abort: " + r + "called inside a group");
                !why.empty()) {
              return why;
            }
            return recv(&in, 3, rank, comm);
          });
      !why.empty()) {
    return why;
  }
  if (auto why = check_message(in, rank, 7, 3, "after the errors"); !why.empty()) return why;
  // 2. A request of the open group cannot be waited for yet; plx_test refuses it too.
  // Groups nest: only the outer plx_group_end runs them.
  std::vector<int32_t> in2(3, -1);
  plx_request_t sent = nullptr, received = nullptr;
  if (plx_group_start() != PLX_SUCCESS || plx_group_start() != PLX_SUCCESS) {
    return "plx_group_start: " + last_error_text();
  }
  std::string why;
  const auto note = [&](const std::string& text) {
    if (why.empty()) why = text;
  };
  note(expect_success(plx_isend(out.data(), 3, PLX_INT32, rank, comm, &sent), "isend"));
  note(expect_success(plx_irecv(in2.data(), 3, PLX_INT32, rank, comm, &received), "irecv"));
  note(expect_success(plx_group_end(), "inner plx_group_end"));
  const std::string open_group =
      "plx_wait: the request belongs to an open group; call plx_group_end() first";
  if (sent) note(expect_failure(plx_wait(sent), PLX_ERROR_INVALID_USAGE, open_group));
  int done = -1;
  if (received) {
    note(expect_failure(plx_test(received, &done), PLX_ERROR_INVALID_USAGE,
                        "plx_test: the request belongs to an open group; call plx_group_end() "
                        "first"));
    if (done != 0) note("plx_test reported a request of the open group done");
  }
  note(expect_success(plx_group_end(), "outer plx_group_end"));
  if (!why.empty()) return why;
  if (auto w = expect_success(plx_wait(sent), "plx_wait after the group"); !w.empty()) {
    return w;
  }
  if (auto w = expect_success(plx_wait(received), "plx_wait after the group"); !w.empty()) {
    return w;
  }
  if (auto w = check_message(in2, rank, 7, 3, "nested group"); !w.empty()) return w;
  // 3. plx_group_end without a start; a group's state belongs to its thread.
  if (auto w = expect_failure(plx_group_end(), PLX_ERROR_INVALID_USAGE,
                              "plx_group_end: no plx_group_start() is open on this thread");
      !w.empty()) {
    return w;
  }
  // The communicator still works with every rank.
  int64_t value = rank + 1, sum = -1;
  if (auto w = expect_success(plx_allreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, comm, nullptr),
                              "allreduce after the errors");
      !w.empty() || sum != int64_t{n} * (n + 1) / 2) {
    return w.empty() ? "allreduce after the errors gave " + std::to_string(sum) : w;
  }
  return "";
}

// Non-blocking sends and receives outside any group do not hold the communicator while in
// flight (as MPI_Isend/MPI_Irecv and gloo): every rank posts its 8 MiB isends to both neighbours
// before any irecv, then an irecv, an allreduce and an isend that its neighbour's irecv waits
// for behind that allreduce. Each would wait for PLEXUS_TIMEOUT_MS if a posted send or receive
// kept later calls from running.
std::string nonblocking_without_group(plx_comm_t world, int rank, int n) {
  const int right = (rank + 1) % n, left = (rank + n - 1) % n;
  const size_t count = size_t{2} << 20;  // 8 MiB of int32
  const std::vector<int32_t> to_right = message(rank, 0, count), to_left = message(rank, 1, count);
  std::vector<int32_t> from_left(count), from_right(count);
  plx_request_t requests[4] = {};
  if (auto w = expect_success(plx_isend(to_right.data(), count, PLX_INT32, right, world,
                                        &requests[0]), "isend to the right");
      !w.empty()) {
    return w;
  }
  if (auto w = expect_success(plx_isend(to_left.data(), count, PLX_INT32, left, world,
                                        &requests[1]), "isend to the left");
      !w.empty()) {
    return w;
  }
  if (auto w = expect_success(plx_irecv(from_left.data(), count, PLX_INT32, left, world,
                                        &requests[2]), "irecv from the left");
      !w.empty()) {
    return w;
  }
  if (auto w = expect_success(plx_irecv(from_right.data(), count, PLX_INT32, right, world,
                                        &requests[3]), "irecv from the right");
      !w.empty()) {
    return w;
  }
  if (auto w = expect_success(plx_waitall(4, requests), "waitall of the exchange"); !w.empty()) {
    return w;
  }
  if (auto w = check_message(from_left, left, 0, count, "from the left"); !w.empty()) return w;
  if (auto w = check_message(from_right, right, 1, count, "from the right"); !w.empty()) return w;

  // irecv, then a collective every rank must reach, then the isend the neighbour waits for.
  std::vector<int32_t> got(count);
  const std::vector<int32_t> later = message(rank, 2, count);
  plx_request_t pending[2] = {};
  if (auto w = expect_success(plx_irecv(got.data(), count, PLX_INT32, left, world, &pending[0]),
                              "irecv before the allreduce");
      !w.empty()) {
    return w;
  }
  int64_t value = rank, sum = -1;
  if (auto w = expect_success(plx_allreduce(&value, &sum, 1, PLX_INT64, PLX_SUM, world, nullptr),
                              "allreduce while a receive is in flight");
      !w.empty() || sum != int64_t{n} * (n - 1) / 2) {
    return w.empty() ? "allreduce while a receive is in flight gave " + std::to_string(sum) : w;
  }
  if (auto w = expect_success(plx_isend(later.data(), count, PLX_INT32, right, world,
                                        &pending[1]), "isend after the allreduce");
      !w.empty()) {
    return w;
  }
  if (auto w = expect_success(plx_waitall(2, pending), "waitall after the allreduce");
      !w.empty()) {
    return w;
  }
  return check_message(got, left, 2, count, "sent after the allreduce");
}

using Scenario = std::string (*)(plx_comm_t world, int rank, int n);

// Runs the scenarios in turn on one world (a fork of 2-5 ranks costs seconds on a loaded 2-core
// runner); a failure names its scenario.
std::string run_scenarios(int rank, int n,
                          std::initializer_list<std::pair<const char*, Scenario>> list) {
  OwnedComm world;
  if (auto why = open_world(n, &world); !why.empty()) return why;
  for (const auto& [name, scenario] : list) {
    if (auto why = scenario(world.get(), rank, n); !why.empty()) {
      return std::string(name) + ": " + why;
    }
  }
  return world.destroy("world");
}

TEST_P(GroupP2PTest, ExchangePatterns) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, run_scenarios(rank, n,
                                           {{"ring and self", ring_and_self},
                                            {"pair in order", pair_in_order},
                                            {"with every rank", many_with_every_rank},
                                            {"two communicators", spanning_two_communicators},
                                            {"non-blocking, no group",
                                             nonblocking_without_group}}));
  });
}

TEST_P(GroupP2PTest, LargeMessagesBlockingPairsAndErrors) {
  const int n = GetParam().ranks;
  run([n](int rank) {
    return rank_result(rank, run_scenarios(rank, n,
                                           {{"large", large_and_blocking_pairs},
                                            {"errors", errors_and_open_group}}));
  });
}

// Each transport once; 2, 3 and 5 ranks between them (with 2, left and right are one rank).
INSTANTIATE_TEST_SUITE_P(Transports, GroupP2PTest,
                         ::testing::Values(RankCase{"tcp", 5}, RankCase{"shm", 2},
                                           RankCase{"ucx", 3}),
                         rank_case_name);

// No communicator needed.
TEST(Groups, EndWithoutStartAndGroupsBelongToTheirThread) {
  EXPECT_EQ(expect_failure(plx_group_end(), PLX_ERROR_INVALID_USAGE,
                           "plx_group_end: no plx_group_start() is open on this thread"),
            "");
  ASSERT_EQ(plx_group_start(), PLX_SUCCESS);
  ASSERT_EQ(plx_group_end(), PLX_SUCCESS);  // an empty group
  ASSERT_EQ(plx_group_start(), PLX_SUCCESS);
  std::string other;
  std::thread([&] {
    other = expect_failure(plx_group_end(), PLX_ERROR_INVALID_USAGE,
                           "plx_group_end: no plx_group_start() is open on this thread");
  }).join();
  EXPECT_EQ(other, "");
  EXPECT_EQ(plx_group_end(), PLX_SUCCESS);
  EXPECT_EQ(plx_group_end(), PLX_ERROR_INVALID_USAGE);
}

}  // namespace
}  // namespace plexus::test
