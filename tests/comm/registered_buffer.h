// registered_buffer.h - what the registered-buffer tests share (registered_buffers_test.cpp,
// registered_collectives_test.cpp): a guarded plx_mem_alloc buffer, registered on a communicator
// or not, the name of the last algorithm, and a loop over every datatype and reduction op. The
// forked world of ranks is transport_cases.h's expect_ranks_pass.
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

// Runs check(datatype, op, in_place) for every datatype and reduction op, in place every second
// time, until one returns a reason; returns it ("" when all passed).
template <typename Check>
std::string every_datatype_and_op(Check check) {
  std::string why;
  int t = 0;
  for (int dt = 0; dt < PLX_NUM_DATATYPES && why.empty(); ++dt) {
    for (int op = 0; op < PLX_NUM_OPS && why.empty(); ++op, ++t) {
      why = check(static_cast<plx_datatype_t>(dt), static_cast<plx_red_op_t>(op), t % 2 == 1);
    }
  }
  return why;
}

// The name of a test parameterised by its rank count: "3ranks".
inline std::string ranks_param_name(const ::testing::TestParamInfo<int>& info) {
  return std::to_string(info.param) + "ranks";
}

}  // namespace plexus::test
