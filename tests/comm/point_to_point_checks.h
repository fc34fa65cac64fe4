// point_to_point_checks.h - the message checks that transport_test.cpp (a communicator's
// libfabric transport) and ucx_transport_test.cpp (UcxTransport) both run on every rank.
//
//   exchange_sizes  0 bytes, 1 byte, 5 bytes into a larger buffer and 7 MiB to every rank (itself
//                   included), receives posted in the reverse order of the sends
//   many_tags       200 tags to the right neighbour, received in a shuffled order
//   poll_with_test  a receive completed by polling test() instead of wait_all()
//
// Every byte is checked against a closed-form pattern. Each returns 0, or a rank_failure()
// (tests/support/multiprocess.h) naming the rank, peer, tag and byte.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "comm/transport/transport.h"
#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {

inline constexpr uint64_t kTagBase = uint64_t{7} << 32;
inline constexpr size_t kLargeBytes = size_t{7} << 20;

inline std::string last_error() { return plx_get_last_error(nullptr); }

// Byte i of the message from src to dst with `tag`.
inline uint8_t pattern(int src, int dst, uint64_t tag, size_t i) {
  return static_cast<uint8_t>(src * 131 + dst * 31 + (tag & 0xffff) * 7 + i * 13 + (i >> 8));
}

inline std::vector<uint8_t> make_message(int src, int dst, uint64_t tag, size_t bytes) {
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = pattern(src, dst, tag, i);
  return data;
}

// Returns "" or the first wrong byte.
inline std::string check_message(const std::vector<uint8_t>& got, size_t bytes, int src, int dst,
                                 uint64_t tag) {
  for (size_t i = 0; i < bytes; ++i) {
    if (got[i] != pattern(src, dst, tag, i)) {
      return "message from rank " + std::to_string(src) + " tag " + std::to_string(tag & 0xffff) +
             ": byte " + std::to_string(i) + " is " + std::to_string(got[i]) + ", expected " +
             std::to_string(pattern(src, dst, tag, i));
    }
  }
  return "";
}

// Sizes to every rank, receives posted in reverse order before the sends.
inline int exchange_sizes(comm::Transport& t, int rank, int n) {
  const size_t sizes[] = {0, 1, 5, kLargeBytes};
  const size_t capacity[] = {0, 1, 64, kLargeBytes};  // 5 bytes land in a 64-byte buffer
  constexpr int kCases = 4;
  std::vector<std::vector<uint8_t>> inbox(n * kCases), outbox(n * kCases);
  std::vector<std::unique_ptr<comm::Request>> requests;
  std::vector<comm::Request*> pointers;
  if (rank % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));  // unexpected
  for (int peer = n - 1; peer >= 0; --peer) {
    for (int k = kCases - 1; k >= 0; --k) {
      auto& buffer = inbox[peer * kCases + k];
      buffer.assign(capacity[k], 0xEE);
      requests.push_back(std::make_unique<comm::Request>());
      if (t.post_recv(peer, kTagBase | k, buffer.data(), capacity[k], *requests.back()) !=
          PLX_SUCCESS) {
        return rank_failure(rank, "post_recv: " + last_error());
      }
      pointers.push_back(requests.back().get());
    }
  }
  for (int peer = 0; peer < n; ++peer) {
    for (int k = 0; k < kCases; ++k) {
      auto& buffer = outbox[peer * kCases + k];
      buffer = make_message(rank, peer, kTagBase | k, sizes[k]);
      requests.push_back(std::make_unique<comm::Request>());
      if (t.post_send(peer, kTagBase | k, buffer.data(), sizes[k], *requests.back()) !=
          PLX_SUCCESS) {
        return rank_failure(rank, "post_send: " + last_error());
      }
      pointers.push_back(requests.back().get());
    }
  }
  if (t.wait_all(pointers.data(), pointers.size()) != PLX_SUCCESS) {
    return rank_failure(rank, "wait_all: " + last_error());
  }
  for (comm::Request* req : pointers) {
    if (!req->done || req->result != PLX_SUCCESS) return rank_failure(rank, "request not done");
  }
  for (int peer = 0; peer < n; ++peer) {
    for (int k = 0; k < kCases; ++k) {
      const auto& got = inbox[peer * kCases + k];
      std::string why = check_message(got, sizes[k], peer, rank, kTagBase | k);
      if (!why.empty()) return rank_failure(rank, why);
      for (size_t i = sizes[k]; i < capacity[k]; ++i) {
        if (got[i] != 0xEE) return rank_failure(rank, "byte past the message was overwritten");
      }
    }
  }
  return 0;
}

// 200 tags to the right neighbour; the left neighbour's messages are received in a shuffled
// order, so matching must go by tag, not by arrival.
inline int many_tags(comm::Transport& t, int rank, int n) {
  constexpr int kTags = 200;
  constexpr size_t kBytes = 64;
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  std::vector<std::vector<uint8_t>> inbox(kTags, std::vector<uint8_t>(kBytes)), outbox(kTags);
  std::vector<comm::Request> recvs(kTags), sends(kTags);
  std::vector<comm::Request*> pointers;
  for (int j = 0; j < kTags; ++j) {
    const int i = (j * 37 + 11) % kTags;  // a permutation (37 and 200 are coprime)
    if (t.post_recv(left, kTagBase | (1000 + i), inbox[i].data(), kBytes, recvs[i]) !=
        PLX_SUCCESS) {
      return rank_failure(rank, "post_recv: " + last_error());
    }
    pointers.push_back(&recvs[i]);
  }
  for (int i = 0; i < kTags; ++i) {
    outbox[i] = make_message(rank, right, kTagBase | (1000 + i), kBytes);
    if (t.post_send(right, kTagBase | (1000 + i), outbox[i].data(), kBytes, sends[i]) !=
        PLX_SUCCESS) {
      return rank_failure(rank, "post_send: " + last_error());
    }
    pointers.push_back(&sends[i]);
  }
  if (t.wait_all(pointers.data(), pointers.size()) != PLX_SUCCESS) {
    return rank_failure(rank, "wait_all: " + last_error());
  }
  for (int i = 0; i < kTags; ++i) {
    std::string why = check_message(inbox[i], kBytes, left, rank, kTagBase | (1000 + i));
    if (!why.empty()) return rank_failure(rank, why);
  }
  return 0;
}

// A receive completed by polling test() instead of wait_all(), within 60 s.
inline int poll_with_test(comm::Transport& t, int rank, int n) {
  const int right = (rank + 1) % n;
  const int left = (rank + n - 1) % n;
  const uint64_t tag = kTagBase | 5000;
  std::vector<uint8_t> inbox(4096);
  std::vector<uint8_t> outbox = make_message(rank, right, tag, 4096);
  comm::Request recv, send;
  if (t.post_recv(left, tag, inbox.data(), inbox.size(), recv) != PLX_SUCCESS ||
      t.post_send(right, tag, outbox.data(), outbox.size(), send) != PLX_SUCCESS) {
    return rank_failure(rank, "post: " + last_error());
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  bool recv_done = false, send_done = false;
  while (!(recv_done && send_done)) {
    if (std::chrono::steady_clock::now() > deadline) return rank_failure(rank, "test(): no end");
    if (t.test(recv, &recv_done) != PLX_SUCCESS || t.test(send, &send_done) != PLX_SUCCESS) {
      return rank_failure(rank, "test: " + last_error());
    }
    if (!(recv_done && send_done)) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  std::string why = check_message(inbox, inbox.size(), left, rank, tag);
  return why.empty() ? 0 : rank_failure(rank, why);
}

// The three above, in order.
inline int point_to_point_checks(comm::Transport& t, int rank, int n) {
  if (int failed = exchange_sizes(t, rank, n)) return failed;
  if (int failed = many_tags(t, rank, n)) return failed;
  return poll_with_test(t, rank, n);
}

}  // namespace plexus::test
