// registered_buffer.h - what the registered-buffer tests share (registered_buffers_test.cpp,
// registered_collectives_test.cpp): a guarded plx_mem_alloc buffer, registered on a communicator
// or not, the name of the last algorithm, and a world of forked ranks running one body.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>

#include "plexus/plexus.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {

// A plx_mem_alloc allocation with kGuardBytes of kGuard on each side of a middle of `bytes`,
// registered on comm (plx_comm_register) or not.
class RegisteredBuffer {
 public:
  static constexpr size_t kGuardBytes = 64;
  static constexpr unsigned char kGuard = 0x5a;

  RegisteredBuffer(plx_comm_t comm, size_t bytes, bool registered, std::string* why)
      : comm_(comm), bytes_(bytes) {
    *why = expect_success(plx_mem_alloc(&base_, bytes + 2 * kGuardBytes), "plx_mem_alloc");
    if (!why->empty()) return;
    std::memset(base_, kGuard, bytes + 2 * kGuardBytes);
    if (registered) {
      *why = expect_success(plx_comm_register(comm, data(), bytes, &handle_), "plx_comm_register");
    }
  }
  ~RegisteredBuffer() {
    if (handle_) plx_comm_deregister(comm_, handle_);
    if (base_) plx_mem_free(base_);
  }
  RegisteredBuffer(const RegisteredBuffer&) = delete;
  RegisteredBuffer& operator=(const RegisteredBuffer&) = delete;

  unsigned char* data() const { return static_cast<unsigned char*>(base_) + kGuardBytes; }
  bool guards_intact() const {
    const auto* p = static_cast<const unsigned char*>(base_);
    for (size_t i = 0; i < kGuardBytes; ++i) {
      if (p[i] != kGuard || p[kGuardBytes + bytes_ + i] != kGuard) return false;
    }
    return true;
  }

 private:
  plx_comm_t comm_;
  size_t bytes_;
  void* base_ = nullptr;
  void* handle_ = nullptr;
};

// plx_comm_last_algorithm's name, "NULL" when none.
inline std::string last_algorithm(plx_comm_t comm) {
  const char* name = nullptr;
  plx_comm_last_algorithm(comm, &name);
  return name ? name : "NULL";
}

// Runs `body` on n forked ranks with `env`, each with a world communicator; every rank must
// return "" (else the test fails, naming the ranks' reasons).
inline void run_registered_world(int n, const std::function<std::string(int, plx_comm_t)>& body,
                                 const EnvList& env) {
  const auto outcomes = run_ranks(
      n,
      [&](int rank) {
        OwnedComm comm;
        std::string why = open_world(n, &comm);
        if (why.empty()) why = body(rank, comm.get());
        if (why.empty()) why = comm.destroy("world");
        return rank_result(rank, why);
      },
      240.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << n << " ranks: " << why;
}

// The name of a test parameterised by its rank count: "3ranks".
inline std::string ranks_param_name(const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "ranks";
}

}  // namespace plexus::test
