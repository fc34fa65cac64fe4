// registered_buffers_test.cpp - plx_mem_alloc / plx_comm_register and the allreduce that reads
// and writes the ranks' registered buffers directly (comm/algorithms/shm_registered_allreduce.cpp),
// on real forked ranks sharing this host (tests/support/multiprocess.h).
//
//   Worlds of 2, 3 and 4 ranks: every datatype and op, in place and out of place, counts just
//   over the 256 KiB threshold (never a multiple of the ranks' parts), results bit for bit
//   against tests/comm/collective_reference.h, sendbuf unchanged, the allocation's bytes outside
//   the registered range untouched, and plx_comm_last_algorithm "allreduce:shm_registered".
//   A pre-multiplied sum and plx_iallreduce take the same path.
//   New allocations every call (more than PeerAllocations::kMaxMappings of them) stay correct,
//   and a rank keeps no more than the last two calls' of its peer's freed allocations mapped.
//   A registration does not carry over to a new allocation at a freed one's address.
//   One rank unregistered, or a call under the threshold: every rank takes the staged path
//   ("allreduce:shm"), same results.
//   The API's errors: NULL and zero arguments, memory not from plx_mem_alloc, a range past the
//   allocation, an unknown or twice-removed handle, a double free; each names the argument.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/registered_buffer.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

constexpr size_t kThresholdBytes = size_t{256} << 10;  // shm_pieces.h kRegisteredMinBytes

EnvList registered_env() {
  EnvList env = transport_env(shm_available() ? "shm" : "tcp", 60000);
  env.push_back({"PLEXUS_ALGO", "allreduce:shm"});
  return env;
}

// A pointer as the library's messages print it (fmt's "{}" of a pointer: 0x and lower-case hex).
std::string fmt_pointer(const void* p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return text;
}

// Mappings in this process of plx_mem_alloc memory of other processes (memfd names carry the
// owner's pid: "/memfd:plexus-mem-<pid>-<id> (deleted)").
size_t peer_allocations_mapped() {
  std::ifstream maps("/proc/self/maps");
  const std::string own = "/memfd:plexus-mem-" + std::to_string(getpid()) + "-";
  std::string line;
  size_t count = 0;
  while (std::getline(maps, line)) {
    count += line.find("/memfd:plexus-mem-") != std::string::npos &&
             line.find(own) == std::string::npos;
  }
  return count;
}

// One allreduce of `count` elements on buffers registered or not; checks values, sendbuf, guards
// and the algorithm named. "" or what is wrong.
std::string one_allreduce(plx_comm_t comm, int rank, int n, size_t count, plx_datatype_t dt,
                          plx_red_op_t op, bool in_place, bool registered, bool nonblocking,
                          const std::string& want_algorithm) {
  const size_t elem = plx_datatype_size(dt), bytes = count * elem;
  const std::string what = std::string(datatype_name(dt)) + " " + op_name(op) + " count " +
                           std::to_string(count) + (in_place ? " in place" : "") + ": ";
  std::string why;
  RegisteredBuffer send(comm, bytes, registered, &why);
  if (!why.empty()) return what + why;
  RegisteredBuffer recv(comm, bytes, registered, &why);
  if (!why.empty()) return what + why;
  fill_periodic(send.data(), count, elem, input_pattern(op, dt, rank));
  if (in_place) fill_periodic(recv.data(), count, elem, input_pattern(op, dt, rank));
  const void* sbuf = in_place ? recv.data() : send.data();
  plx_result_t rc;
  if (nonblocking) {
    plx_request_t request = nullptr;
    rc = plx_iallreduce(sbuf, recv.data(), count, dt, op, comm, &request);
    if (rc == PLX_SUCCESS) rc = plx_wait(request);
  } else {
    rc = plx_allreduce(sbuf, recv.data(), count, dt, op, comm, nullptr);
  }
  if (rc != PLX_SUCCESS) {
    return what + "plx_allreduce: " + plx_get_error_string(rc) + ": " + plx_get_last_error(comm);
  }
  why = check_periodic(recv.data(), count, dt, expected_pattern(op, dt, n));
  if (why.empty() && !in_place) {
    why = check_periodic(send.data(), count, dt, input_pattern(op, dt, rank));
    if (!why.empty()) why = "sendbuf changed: " + why;
  }
  if (why.empty() && !(send.guards_intact() && recv.guards_intact())) {
    why = "bytes outside the registered range were written";
  }
  if (why.empty() && last_algorithm(comm) != want_algorithm) {
    why = "algorithm " + last_algorithm(comm) + ", want " + want_algorithm;
  }
  return why.empty() ? "" : what + why;
}

// Runs `body` on n forked ranks with a world communicator; every rank must return "".
void run_world(int n, const std::function<std::string(int, plx_comm_t)>& body) {
  expect_ranks_pass(
      n, registered_env(), [&](plx_comm_t world, int rank) { return body(rank, world); }, 240.0);
}

// Just over the threshold, and not a multiple of 64 bytes times the ranks.
size_t count_over_threshold(plx_datatype_t dt) {
  return kThresholdBytes / plx_datatype_size(dt) + 1009;
}

class RegisteredAllreduce : public ::testing::TestWithParam<int> {};

TEST_P(RegisteredAllreduce, EveryDatatypeAndOpMatchesTheReference) {
  const int n = GetParam();
  run_world(n, [n](int rank, plx_comm_t comm) {
    return every_datatype_and_op([&](plx_datatype_t type, plx_red_op_t op, bool in_place) {
      return one_allreduce(comm, rank, n, count_over_threshold(type), type, op, in_place, true,
                           false, "allreduce:shm_registered");
    });
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, RegisteredAllreduce, ::testing::Values(2, 3, 4), ranks_param_name);

TEST(RegisteredAllreduceForms, PremulSumAndNonBlockingTakeThePath) {
  run_world(3, [](int rank, plx_comm_t comm) {
    const size_t count = count_over_threshold(PLX_FLOAT32);
    std::string why = one_allreduce(comm, rank, 3, count, PLX_FLOAT32, PLX_SUM, false, true,
                                    true, "allreduce:shm_registered");
    if (!why.empty()) return "plx_iallreduce: " + why;
    // Pre-multiplied sum by 2 of rank + 1: the result is 2 * (1 + 2 + 3) = 12 everywhere.
    const float scalar = 2.0f;
    plx_red_op_t premul;
    why = expect_success(plx_red_op_create_premul_sum(&premul, &scalar, PLX_FLOAT32, comm),
                         "premul");
    if (!why.empty()) return why;
    RegisteredBuffer send(comm, count * sizeof(float), true, &why);
    RegisteredBuffer recv(comm, count * sizeof(float), true, &why);
    if (!why.empty()) return why;
    auto* in = reinterpret_cast<float*>(send.data());
    auto* out = reinterpret_cast<float*>(recv.data());
    for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>(rank + 1);
    why = expect_success(plx_allreduce(in, out, count, PLX_FLOAT32, premul, comm, nullptr),
                         "premul allreduce");
    for (size_t i = 0; i < count && why.empty(); ++i) {
      if (out[i] != 12.0f) why = "premul: index " + std::to_string(i) + " " + std::to_string(out[i]);
    }
    if (why.empty() && last_algorithm(comm) != "allreduce:shm_registered") {
      why = "premul: algorithm " + last_algorithm(comm);
    }
    plx_red_op_destroy(premul, comm);
    return why;
  });
}

TEST(RegisteredAllreduceForms, NewAllocationsEveryCallPastTheMappingCache) {
  // 40 calls with 2 fresh allocations each: 80 per peer, past kMaxMappings (64), so peers drop
  // old mappings on the way; every call must still read the right memory.
  run_world(2, [](int rank, plx_comm_t comm) {
    std::string why;
    for (int call = 0; call < 40 && why.empty(); ++call) {
      why = one_allreduce(comm, rank, 2, count_over_threshold(PLX_INT32), PLX_INT32,
                          call % 2 ? PLX_MAX : PLX_SUM, call % 3 == 0, true, false,
                          "allreduce:shm_registered");
      if (!why.empty()) why = "call " + std::to_string(call) + ": " + why;
    }
    // The peer freed each call's buffers after it: this rank keeps at most those of the last
    // two calls mapped (the last checked set stays until a later check replaces it), not 2 per
    // call up to the cache's 64.
    const size_t held = peer_allocations_mapped();
    if (why.empty() && held > 4) {
      why = std::to_string(held) + " of the peer's freed allocations are still mapped";
    }
    return why;
  });
}

TEST(RegisteredAllreduceFallback, OneUnregisteredRankMakesEveryRankStage) {
  run_world(3, [](int rank, plx_comm_t comm) {
    const size_t count = count_over_threshold(PLX_FLOAT64);
    // Rank 1 passes plain plx_mem_alloc memory, not registered.
    std::string why = one_allreduce(comm, rank, 3, count, PLX_FLOAT64, PLX_SUM, false, rank != 1,
                                    false, "allreduce:shm");
    // Then all registered: the zero-copy path again, on the same communicator.
    if (why.empty()) {
      why = one_allreduce(comm, rank, 3, count, PLX_FLOAT64, PLX_MIN, false, true, false,
                          "allreduce:shm_registered");
    }
    // A registration does not outlive its allocation: freed without plx_comm_deregister, then
    // allocated again (often at the same address), the new memory is not registered.
    if (why.empty()) {
      const size_t bytes = count * sizeof(double);
      void *send = nullptr, *recv = nullptr, *hs = nullptr, *hr = nullptr;
      why = expect_success(plx_mem_alloc(&send, bytes), "plx_mem_alloc");
      if (why.empty()) why = expect_success(plx_mem_alloc(&recv, bytes), "plx_mem_alloc");
      if (why.empty()) why = expect_success(plx_comm_register(comm, send, bytes, &hs), "register");
      if (why.empty()) why = expect_success(plx_comm_register(comm, recv, bytes, &hr), "register");
      if (why.empty()) why = expect_success(plx_mem_free(send), "plx_mem_free");
      if (why.empty()) why = expect_success(plx_mem_alloc(&send, bytes), "plx_mem_alloc again");
      auto* in = static_cast<double*>(send);
      for (size_t i = 0; why.empty() && i < count; ++i) in[i] = rank + 1.0;
      if (why.empty()) {
        why = expect_success(
            plx_allreduce(send, recv, count, PLX_FLOAT64, PLX_SUM, comm, nullptr), "allreduce");
      }
      const auto* out = static_cast<const double*>(recv);
      for (size_t i = 0; why.empty() && i < count; ++i) {
        if (out[i] != 6.0) why = "after a free and a new allocation: index " + std::to_string(i);
      }
      if (why.empty() && last_algorithm(comm) != "allreduce:shm") {
        why = "a freed allocation's registration applied to a new one: " + last_algorithm(comm);
      }
      plx_comm_deregister(comm, hs);
      plx_comm_deregister(comm, hr);
      plx_mem_free(send);
      plx_mem_free(recv);
    }
    // Under the threshold: staged, with no announce barrier.
    if (why.empty()) {
      why = one_allreduce(comm, rank, 3, 1000, PLX_FLOAT64, PLX_SUM, true, true, false,
                          "allreduce:shm");
    }
    return why;
  });
}

TEST(RegisteredBufferApi, ErrorsNameTheArgument) {
  run_world(1, [](int, plx_comm_t comm) {
    std::string why = expect_failure(plx_mem_alloc(nullptr, 64), PLX_ERROR_INVALID_ARGUMENT,
                                     "plx_mem_alloc: ptr is NULL");
    void* p = nullptr;
    if (why.empty()) {
      why = expect_failure(plx_mem_alloc(&p, 0), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_mem_alloc: bytes is 0");
    }
    if (why.empty()) {
      const plx_result_t rc = plx_mem_alloc(&p, size_t{1} << 46);  // 64 TiB: no host has it
      const std::string message = plx_get_last_error(nullptr);
      if (rc != PLX_ERROR_INVALID_ARGUMENT ||
          message.rfind("plx_mem_alloc: bytes 70368744177664 is more than this host's memory",
                        0) != 0) {
        why = std::string("plx_mem_alloc(2^46): ") + plx_get_error_string(rc) + ": " + message;
      }
    }
    if (why.empty()) why = expect_success(plx_mem_alloc(&p, 5000), "plx_mem_alloc");
    if (!why.empty()) return why;
    // Zeroed, and rounded up to whole pages: the whole of 8192 bytes is writable.
    for (size_t i = 0; i < 5000 && why.empty(); ++i) {
      if (static_cast<unsigned char*>(p)[i] != 0) why = "plx_mem_alloc memory is not zeroed";
    }
    std::memset(p, 1, 5000);
    std::vector<unsigned char> plain(64);
    void* handle = nullptr;
    const std::string plain_address = fmt_pointer(plain.data());
    if (why.empty()) {
      why = expect_failure(plx_comm_register(comm, plain.data(), 64, &handle),
                           PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_register: rank 0: buff " + plain_address +
                               " (+64 bytes) is not inside one allocation of plx_mem_alloc");
    }
    if (why.empty() && plx_comm_register(comm, p, 8193, &handle) != PLX_ERROR_INVALID_ARGUMENT) {
      why = "a range past the allocation was registered";
    }
    if (why.empty() && plx_comm_register(comm, p, 0, &handle) != PLX_ERROR_INVALID_ARGUMENT) {
      why = "0 bytes were registered";
    }
    if (why.empty() && plx_comm_register(nullptr, p, 64, &handle) != PLX_ERROR_INVALID_ARGUMENT) {
      why = "a NULL comm was accepted";
    }
    if (why.empty() && plx_comm_register(comm, p, 64, nullptr) != PLX_ERROR_INVALID_ARGUMENT) {
      why = "a NULL handle was accepted";
    }
    if (why.empty()) why = expect_success(plx_comm_register(comm, p, 8192, &handle), "register");
    if (why.empty()) why = expect_success(plx_comm_deregister(comm, handle), "deregister");
    if (why.empty()) {
      why = expect_failure(plx_comm_deregister(comm, handle), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_comm_deregister: rank 0: handle " + fmt_pointer(handle) +
                               " is not a registration of this communicator");
    }
    if (why.empty()) why = expect_success(plx_mem_free(nullptr), "plx_mem_free(NULL)");
    if (why.empty()) why = expect_success(plx_mem_free(p), "plx_mem_free");
    if (why.empty()) {
      why = expect_failure(plx_mem_free(p), PLX_ERROR_INVALID_ARGUMENT,
                           "plx_mem_free: ptr " + fmt_pointer(p) +
                               " was not returned by plx_mem_alloc (or was freed)");
    }
    if (why.empty() && plx_mem_free(plain.data()) != PLX_ERROR_INVALID_ARGUMENT) {
      why = "plx_mem_free took memory that plx_mem_alloc did not return";
    }
    return why;
  });
}

}  // namespace
}  // namespace plexus::test
