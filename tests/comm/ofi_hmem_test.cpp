// ofi_hmem_test.cpp - the libfabric FI_HMEM path of the transport on the CPU
// (comm/transport/ofi/registration_cache.h, ofi_transport_hmem.cpp, provider_select.h).
//
//   RegistrationCache   hits inside a registered allocation, misses per space, device and id,
//                       the whole allocation registered once, id 0 never cached, the least
//                       recently used entry closed beyond the capacity, a reallocated range
//                       dropped, registrations held by an operation outliving their eviction, a
//                       refused registration cached nowhere, clear() closing everything.
//   Over shm (real ranks, real provider): host buffers registered as FI_HMEM_SYSTEM through
//                       post_send_hmem / post_recv_hmem arrive intact (1 byte, 5 bytes inside a
//                       larger allocation, 1 MiB, and 3 MiB split in 64 KiB parts), matching
//                       ordinary sends and receives on the peer; the cache registers each
//                       allocation once; a host collective still runs; every registration is
//                       closed by plx_comm_destroy; a CUDA registration the provider refuses
//                       turns CUDA off and posts nothing.
//   PLEXUS_FI_HMEM:     0 opens the same provider without FI_HMEM, and post_*_hmem refuse with the
//                       reason; the default (1) does the same for shm, whose FI_HMEM entry costs
//                       host messages their inject protocol (2 takes it anyway: every case above);
//                       3 is refused.
//   Provider choice:    asking for FI_HMEM keeps the provider and domain (shm, tcp).
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/transport/ofi/ofi_transport.h"
#include "comm/transport/ofi/provider_select.h"
#include "comm/transport/ofi/registration_cache.h"
#include "plexus/plexus.h"
#include "tests/comm/shm_available.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using comm::BufferMemory;
using comm::MemorySpace;
using comm::Request;
using comm::ofi::Registration;
using comm::ofi::RegistrationCache;

// ---- the cache, with a registrar that only counts ------------------------------------------

struct FakeRegistrar {
  struct Call {
    MemorySpace space;
    int device;
    uintptr_t base;
    size_t bytes;
  };
  std::vector<Call> calls;
  int fail_with = 0;  // a libfabric error code to return instead

  comm::ofi::Registrar fn() {
    return [this](const BufferMemory& memory, const void* base, size_t bytes,
                  std::shared_ptr<Registration>* out) -> int {
      if (fail_with != 0) return fail_with;
      calls.push_back({memory.space, memory.device, reinterpret_cast<uintptr_t>(base), bytes});
      // The descriptor tells which registration it is: the call number.
      *out = std::make_shared<Registration>(nullptr, reinterpret_cast<void*>(calls.size()));
      return 0;
    };
  }
};

// An allocation of `bytes` at a made-up address (the cache never touches memory).
BufferMemory allocation(uintptr_t base, size_t bytes, uint64_t id, int device = 0,
                        MemorySpace space = MemorySpace::Cuda) {
  BufferMemory m;
  m.space = space;
  m.device = device;
  m.base = reinterpret_cast<const void*>(base);
  m.bytes = bytes;
  m.id = id;
  return m;
}

const void* at(uintptr_t address) { return reinterpret_cast<const void*>(address); }

TEST(RegistrationCache, HitsInsideTheRegisteredAllocation) {
  FakeRegistrar fake;
  RegistrationCache cache(8, fake.fn());
  const BufferMemory a = allocation(0x100000, 1 << 20, 7);
  std::shared_ptr<Registration> first, second, third;
  ASSERT_EQ(cache.find(a, at(0x100000 + 4096), 100, &first), 0);
  // The whole allocation was registered, not the 100 bytes.
  ASSERT_EQ(fake.calls.size(), 1u);
  EXPECT_EQ(fake.calls[0].base, 0x100000u);
  EXPECT_EQ(fake.calls[0].bytes, size_t{1} << 20);
  // Any other buffer inside it is a hit on the same registration, up to the last byte.
  ASSERT_EQ(cache.find(a, at(0x100000), 1 << 20, &second), 0);
  ASSERT_EQ(cache.find(a, at(0x100000 + (1 << 20) - 1), 1, &third), 0);
  EXPECT_EQ(fake.calls.size(), 1u);
  EXPECT_EQ(second.get(), first.get());
  EXPECT_EQ(third.get(), first.get());
  EXPECT_EQ(cache.stats().hits, 2u);
  EXPECT_EQ(cache.stats().misses, 1u);
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST(RegistrationCache, MissesOnAnotherDeviceSpaceOrId) {
  FakeRegistrar fake;
  RegistrationCache cache(8, fake.fn());
  std::shared_ptr<Registration> r;
  ASSERT_EQ(cache.find(allocation(0x100000, 4096, 7, 0), at(0x100000), 64, &r), 0);
  ASSERT_EQ(cache.find(allocation(0x100000, 4096, 7, 1), at(0x100000), 64, &r), 0);  // device
  ASSERT_EQ(cache.find(allocation(0x200000, 4096, 8, 0, MemorySpace::Host), at(0x200000), 64, &r),
            0);  // host memory of another allocation
  ASSERT_EQ(cache.find(allocation(0x100000, 4096, 7, 0), at(0x100000 + 4000), 200, &r), 0);
  // The last one runs past the allocation's end: not a hit, the buffer alone is registered.
  EXPECT_EQ(fake.calls.size(), 4u);
  EXPECT_EQ(fake.calls[1].device, 1);
  EXPECT_EQ(fake.calls[2].space, MemorySpace::Host);
  EXPECT_EQ(fake.calls[3].base, 0x100000u + 4000);
  EXPECT_EQ(fake.calls[3].bytes, 200u);
  EXPECT_EQ(cache.stats().hits, 0u);
  EXPECT_EQ(cache.stats().misses, 4u);
}

TEST(RegistrationCache, WithoutAnIdNothingIsCached) {
  FakeRegistrar fake;
  RegistrationCache cache(8, fake.fn());
  std::shared_ptr<Registration> r1, r2;
  const BufferMemory unknown = allocation(0, 0, 0);
  ASSERT_EQ(cache.find(unknown, at(0x300000), 128, &r1), 0);
  ASSERT_EQ(cache.find(unknown, at(0x300000), 128, &r2), 0);
  ASSERT_EQ(fake.calls.size(), 2u);
  EXPECT_EQ(fake.calls[0].base, 0x300000u);
  EXPECT_EQ(fake.calls[0].bytes, 128u);
  EXPECT_NE(r1.get(), r2.get());
  EXPECT_EQ(cache.stats().entries, 0u);
  // Released by the operation: closed at once.
  std::weak_ptr<Registration> gone = r1;
  r1.reset();
  EXPECT_TRUE(gone.expired());
}

TEST(RegistrationCache, EvictsTheLeastRecentlyUsedBeyondCapacity) {
  FakeRegistrar fake;
  RegistrationCache cache(3, fake.fn());
  std::vector<std::weak_ptr<Registration>> held;
  for (uint64_t id = 1; id <= 3; ++id) {
    std::shared_ptr<Registration> r;
    ASSERT_EQ(cache.find(allocation(id << 20, 4096, id), at(id << 20), 64, &r), 0);
    held.push_back(r);
  }
  // Use allocation 1 again: allocation 2 is now the least recently used.
  std::shared_ptr<Registration> r;
  ASSERT_EQ(cache.find(allocation(1 << 20, 4096, 1), at(1 << 20), 64, &r), 0);
  r.reset();
  for (uint64_t id = 4; id <= 5; ++id) {
    ASSERT_EQ(cache.find(allocation(id << 20, 4096, id), at(id << 20), 64, &r), 0);
    held.push_back(r);
    r.reset();
    EXPECT_LE(cache.stats().entries, 3u) << "after allocation " << id;
  }
  EXPECT_EQ(cache.stats().entries, 3u);
  EXPECT_EQ(cache.stats().evictions, 2u);
  EXPECT_FALSE(held[0].expired()) << "allocation 1 was used last but one";
  EXPECT_TRUE(held[1].expired()) << "allocation 2 was the least recently used";
  EXPECT_TRUE(held[2].expired()) << "allocation 3 was next";
  EXPECT_FALSE(held[3].expired());
  EXPECT_FALSE(held[4].expired());
  // Allocation 2 registers again when it comes back.
  ASSERT_EQ(cache.find(allocation(2 << 20, 4096, 2), at(2 << 20), 64, &r), 0);
  EXPECT_EQ(fake.calls.size(), 6u);
  EXPECT_EQ(cache.stats().hits, 1u);
}

TEST(RegistrationCache, AReallocatedRangeIsNeverHit) {
  FakeRegistrar fake;
  RegistrationCache cache(8, fake.fn());
  std::shared_ptr<Registration> old_one, new_one;
  ASSERT_EQ(cache.find(allocation(0x400000, 8192, 11), at(0x400000), 64, &old_one), 0);
  std::weak_ptr<Registration> old_weak = old_one;
  old_one.reset();
  // Freed and allocated again at the same address: a new id.
  ASSERT_EQ(cache.find(allocation(0x400000, 8192, 12), at(0x400000), 64, &new_one), 0);
  EXPECT_EQ(fake.calls.size(), 2u);
  EXPECT_TRUE(old_weak.expired()) << "the stale registration is closed";
  EXPECT_EQ(cache.stats().entries, 1u);
  EXPECT_EQ(cache.stats().evictions, 1u);
}

TEST(RegistrationCache, AnOperationKeepsAnEvictedRegistration) {
  FakeRegistrar fake;
  RegistrationCache cache(1, fake.fn());
  std::shared_ptr<Registration> in_flight, other;
  ASSERT_EQ(cache.find(allocation(1 << 20, 4096, 1), at(1 << 20), 64, &in_flight), 0);
  ASSERT_EQ(cache.find(allocation(2 << 20, 4096, 2), at(2 << 20), 64, &other), 0);
  EXPECT_EQ(cache.stats().evictions, 1u);
  std::weak_ptr<Registration> weak = in_flight;
  EXPECT_FALSE(weak.expired()) << "closed while an operation still uses it";
  EXPECT_EQ(in_flight->desc(), reinterpret_cast<void*>(1));
  in_flight.reset();  // the operation completed
  EXPECT_TRUE(weak.expired());
}

TEST(RegistrationCache, ARefusedRegistrationIsNotCached) {
  FakeRegistrar fake;
  fake.fail_with = -FI_ENOSYS;
  RegistrationCache cache(4, fake.fn());
  std::shared_ptr<Registration> r;
  EXPECT_EQ(cache.find(allocation(1 << 20, 4096, 1), at(1 << 20), 64, &r), -FI_ENOSYS);
  EXPECT_EQ(r, nullptr);
  EXPECT_EQ(cache.stats().misses, 0u);
  EXPECT_EQ(cache.stats().entries, 0u);
  fake.fail_with = 0;
  EXPECT_EQ(cache.find(allocation(1 << 20, 4096, 1), at(1 << 20), 64, &r), 0);
  EXPECT_EQ(cache.stats().entries, 1u);
}

TEST(RegistrationCache, ClearClosesEveryRegistration) {
  FakeRegistrar fake;
  RegistrationCache cache(8, fake.fn());
  std::vector<std::weak_ptr<Registration>> held;
  for (uint64_t id = 1; id <= 4; ++id) {
    std::shared_ptr<Registration> r;
    ASSERT_EQ(cache.find(allocation(id << 20, 4096, id), at(id << 20), 64, &r), 0);
    held.push_back(r);
  }
  cache.clear();
  for (const auto& weak : held) EXPECT_TRUE(weak.expired());
  EXPECT_EQ(cache.stats().entries, 0u);
}

// ---- real ranks over a real provider -------------------------------------------------------

// Whether `provider` offers FI_HMEM here, asked in a forked child (the test process itself
// never initialises libfabric before it forks ranks).
bool provider_has_hmem(const std::string& provider) {
  auto outcome = run_ranks(1, [&](int) {
    comm::ofi::InfoPtr hints = comm::ofi::make_hints(provider);
    fi_info* list = nullptr;
    if (fi_getinfo(comm::ofi::api_version(), nullptr, nullptr, 0, hints.get(), &list) != 0) {
      return 3;
    }
    comm::ofi::InfoPtr owned(list);
    return comm::ofi::hmem_variant(*list) ? 0 : 4;
  });
  return outcome[0].exited && outcome[0].exit_code == 0;
}

unsigned char pattern_byte(int from, size_t i) {
  return static_cast<unsigned char>((i * 131 + static_cast<size_t>(from) * 17 + 5) & 0xff);
}

// Posts and waits; "" or the failure.
std::string wait_one(comm::Transport& t, Request& req, const std::string& what) {
  Request* reqs[] = {&req};
  const plx_result_t rc = t.wait_all(reqs, 1);
  return rc == PLX_SUCCESS ? "" : what + ": " + plx_get_error_string(rc) + ": " +
                                      plexus::last_error();
}

// Rank 0 and rank 1 exchange messages of these sizes through the FI_HMEM calls with host memory
// (FI_HMEM_SYSTEM), each matched by an ordinary call on the other side in one direction and by an
// FI_HMEM call in the other. Returns "" or the first failure.
std::string exchange(comm::ofi::OfiTransport& t, int rank) {
  const int peer = 1 - rank;
  // One allocation (id 1) for the messages rank 0 sends and receives, so the cache registers it
  // once; the 5-byte message sits at an odd offset inside it.
  const size_t sizes[] = {1, 5, size_t{1} << 20, size_t{3} << 20};
  const size_t offsets[] = {0, 4099, 64, 0};
  std::vector<unsigned char> arena((size_t{3} << 20) + 8192, 0);
  BufferMemory memory;
  memory.space = MemorySpace::Host;
  memory.base = arena.data();
  memory.bytes = arena.size();
  memory.id = 1;
  uint64_t tag = 1;
  for (int direction = 0; direction < 2; ++direction) {
    const bool i_send = (direction == 0) == (rank == 0);
    for (size_t c = 0; c < 4; ++c, ++tag) {
      const size_t bytes = sizes[c];
      unsigned char* buf = arena.data() + offsets[c];
      const std::string what = std::string(i_send ? "send" : "recv") + " of " +
                               std::to_string(bytes) + " bytes, direction " +
                               std::to_string(direction);
      Request req;
      plx_result_t rc;
      // Rank 0 always uses the FI_HMEM calls; rank 1 only in direction 1.
      const bool hmem_call = rank == 0 || direction == 1;
      if (i_send) {
        for (size_t i = 0; i < bytes; ++i) buf[i] = pattern_byte(rank, i);
        rc = hmem_call ? t.post_send_hmem(peer, tag, buf, bytes, memory, req)
                       : t.post_send(peer, tag, buf, bytes, req);
      } else {
        std::memset(buf, 0xee, bytes);
        rc = hmem_call ? t.post_recv_hmem(peer, tag, buf, bytes, memory, req)
                       : t.post_recv(peer, tag, buf, bytes, req);
      }
      if (rc != PLX_SUCCESS) {
        return what + ": post: " + plx_get_error_string(rc) + ": " + plexus::last_error();
      }
      if (std::string why = wait_one(t, req, what); !why.empty()) return why;
      if (!i_send) {
        for (size_t i = 0; i < bytes; ++i) {
          if (buf[i] != pattern_byte(peer, i)) {
            return what + ": byte " + std::to_string(i) + " is " + std::to_string(buf[i]) +
                   ", want " + std::to_string(pattern_byte(peer, i));
          }
        }
      }
    }
  }
  return "";
}

int shm_rank(int rank) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, std::string("plx_comm_init_from_env: ") + plx_get_last_error(nullptr));
  }
  auto* t = dynamic_cast<comm::ofi::OfiTransport*>(comm->transport.get());
  if (t == nullptr || std::string(t->name()) != "shm") {
    return rank_failure(rank, std::string("transport is not libfabric shm: ") +
                                  comm->transport->name());
  }
  if (!t->hmem() || !t->hmem_supported(MemorySpace::Host)) {
    return rank_failure(rank, "shm offers FI_HMEM here, but the transport was opened without it");
  }
  if (std::string why = exchange(*t, rank); !why.empty()) return rank_failure(rank, why);
  const auto& stats = t->registration_stats();
  // Rank 0 used the FI_HMEM calls 8 times on one allocation: one registration, 7 hits.
  // Rank 1 used them 4 times (direction 1).
  const uint64_t calls = rank == 0 ? 8 : 4;
  if (stats.misses != 1 || stats.hits != calls - 1 || stats.entries != 1) {
    return rank_failure(rank, "registrations: " + std::to_string(stats.misses) + " made, " +
                                  std::to_string(stats.hits) + " hits, " +
                                  std::to_string(stats.entries) + " cached; want 1, " +
                                  std::to_string(calls - 1) + ", 1");
  }
  if (Registration::open_count() != 1) {
    return rank_failure(rank, std::to_string(Registration::open_count()) +
                                  " registrations open before destroy, want 1");
  }
  // Host collectives still run on the FI_HMEM endpoint.
  std::vector<int32_t> in(1001, rank + 1), out(1001, 0);
  if (plx_allreduce(in.data(), out.data(), in.size(), PLX_INT32, PLX_SUM, comm, nullptr) !=
          PLX_SUCCESS ||
      out[0] != 3 || out[1000] != 3) {
    return rank_failure(rank, std::string("allreduce on the FI_HMEM endpoint: ") +
                                  plx_get_last_error(nullptr));
  }
  if (plx_comm_destroy(comm) != PLX_SUCCESS) {
    return rank_failure(rank, std::string("plx_comm_destroy: ") + plx_get_last_error(nullptr));
  }
  if (Registration::open_count() != 0) {
    return rank_failure(rank, std::to_string(Registration::open_count()) +
                                  " registrations still open after plx_comm_destroy");
  }
  return 0;
}

// shm with FI_HMEM whenever offered (PLEXUS_FI_HMEM=2: its FI_HMEM entry has no inject protocol,
// so the default, 1, leaves it off).
EnvList shm_env() {
  return {{"PLEXUS_FI_PROVIDER", "shm"}, {"PLEXUS_TIMEOUT_MS", "30000"},
          {"PLEXUS_FI_MAX_MSG_BYTES", "64K"}, {"PLEXUS_COST_MODEL", "2.5,0.1,0.05"},
          {"PLEXUS_FI_HMEM", "2"}};
}

TEST(OfiHmem, HostBuffersRegisteredAsSystemMemoryArriveIntact) {
  if (!shm_available()) GTEST_SKIP() << "shm provider does not work here";
  if (!provider_has_hmem("shm")) GTEST_SKIP() << "libfabric's shm offers no FI_HMEM here";
  auto outcomes = run_ranks(2, shm_rank, 120, shm_env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// One rank sends itself a message from host memory labelled as CUDA device memory. Without
// CUDA support in libfabric the registration is refused: PLX_ERROR_UNSUPPORTED naming
// fi_mr_regattr, nothing posted (the next ordinary message matches the receive), CUDA off and
// host memory still on. Where libfabric can register it, the bytes must arrive.
int refused_rank(int rank) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, std::string("plx_comm_init_from_env: ") + plx_get_last_error(nullptr));
  }
  comm::Transport& t = *comm->transport;
  std::vector<unsigned char> sent(4096), received(4096, 0);
  for (size_t i = 0; i < sent.size(); ++i) sent[i] = pattern_byte(0, i);
  BufferMemory cuda;
  cuda.space = MemorySpace::Cuda;
  cuda.device = 0;
  cuda.base = sent.data();
  cuda.bytes = sent.size();
  cuda.id = 99;
  Request recv_req, send_req;
  if (t.post_recv(0, 5, received.data(), received.size(), recv_req) != PLX_SUCCESS) {
    return rank_failure(rank, "post_recv: " + std::string(plexus::last_error()));
  }
  const plx_result_t rc = t.post_send_hmem(0, 5, sent.data(), sent.size(), cuda, send_req);
  if (rc == PLX_ERROR_UNSUPPORTED) {
    const std::string message = plexus::last_error();
    if (message.rfind("rank 0: post_send_hmem: fi_mr_regattr of 4096 bytes of CUDA device "
                      "memory (device 0) on provider shm failed: ",
                      0) != 0 ||
        message.find("CUDA device buffers go through host memory on this communicator") ==
            std::string::npos) {
      return rank_failure(rank, "refused registration message: " + message);
    }
    if (t.hmem_supported(MemorySpace::Cuda) || !t.hmem_supported(MemorySpace::Host)) {
      return rank_failure(rank, "after a refused CUDA registration: CUDA must be off, host on");
    }
    const plx_result_t again = t.post_send_hmem(0, 5, sent.data(), sent.size(), cuda, send_req);
    if (again != PLX_ERROR_UNSUPPORTED ||
        std::string(plexus::last_error()).find("could not register CUDA device memory earlier") ==
            std::string::npos) {
      return rank_failure(rank, "second CUDA send: " + std::string(plexus::last_error()));
    }
    // Nothing was posted: an ordinary send is what the receive gets.
    if (t.post_send(0, 5, sent.data(), sent.size(), send_req) != PLX_SUCCESS) {
      return rank_failure(rank, "post_send: " + std::string(plexus::last_error()));
    }
  } else if (rc != PLX_SUCCESS) {
    return rank_failure(rank, std::string("post_send_hmem(CUDA): ") + plx_get_error_string(rc) +
                                  ": " + plexus::last_error());
  }
  Request* both[] = {&recv_req, &send_req};
  if (t.wait_all(both, 2) != PLX_SUCCESS) {
    return rank_failure(rank, "wait_all: " + std::string(plexus::last_error()));
  }
  if (received != sent) return rank_failure(rank, "the message arrived with other bytes");
  return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, "plx_comm_destroy");
}

TEST(OfiHmem, ARefusedRegistrationPostsNothingAndTurnsThatSpaceOff) {
  if (!shm_available()) GTEST_SKIP() << "shm provider does not work here";
  if (!provider_has_hmem("shm")) GTEST_SKIP() << "libfabric's shm offers no FI_HMEM here";
  auto outcomes = run_ranks(1, refused_rank, 60, shm_env());
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

int hmem_off_rank(int rank) {
  plx_comm_t comm = nullptr;
  if (plx_comm_init_from_env(&comm) != PLX_SUCCESS) {
    return rank_failure(rank, std::string("plx_comm_init_from_env: ") + plx_get_last_error(nullptr));
  }
  auto* t = dynamic_cast<comm::ofi::OfiTransport*>(comm->transport.get());
  if (t == nullptr || std::string(t->name()) != "shm") return rank_failure(rank, "not shm");
  if (t->hmem() || t->hmem_supported(MemorySpace::Host) || t->hmem_supported(MemorySpace::Cuda)) {
    return rank_failure(rank, "PLEXUS_FI_HMEM=0 but the transport has FI_HMEM");
  }
  unsigned char byte = 1;
  BufferMemory memory;
  memory.base = &byte;
  memory.bytes = 1;
  memory.id = 1;
  Request req;
  const plx_result_t rc = t->post_send_hmem(0, 9, &byte, 1, memory, req);
  const std::string want = "rank 0: post_send_hmem: provider shm was not opened with FI_HMEM";
  if (rc != PLX_ERROR_UNSUPPORTED || want != plexus::last_error()) {
    return rank_failure(rank, std::string("post_send_hmem: ") + plx_get_error_string(rc) + " \"" +
                                  plexus::last_error() + "\", want \"" + want + "\"");
  }
  return plx_comm_destroy(comm) == PLX_SUCCESS ? 0 : rank_failure(rank, "plx_comm_destroy");
}

EnvList with_hmem_setting(const char* value) {
  EnvList env = shm_env();
  env.pop_back();
  if (value != nullptr) env.push_back({"PLEXUS_FI_HMEM", value});
  return env;
}

TEST(OfiHmem, PlexusFiHmemZeroLeavesItOff) {
  if (!shm_available()) GTEST_SKIP() << "shm provider does not work here";
  auto outcomes = run_ranks(1, hmem_off_rank, 60, with_hmem_setting("0"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// The default (1) takes an FI_HMEM entry only when host messages lose nothing by it: shm's has
// no inject protocol (inject_size 0), so shm stays without FI_HMEM.
TEST(OfiHmem, TheDefaultKeepsAnEntryThatCostsHostMessages) {
  if (!shm_available()) GTEST_SKIP() << "shm provider does not work here";
  if (!provider_has_hmem("shm")) GTEST_SKIP() << "libfabric's shm offers no FI_HMEM here";
  auto outcomes = run_ranks(1, hmem_off_rank, 60, with_hmem_setting(nullptr));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Refused whatever the transport: under UCX too, which never reads it.
TEST(OfiHmem, ABadPlexusFiHmemIsRefused) {
  EnvList ucx = {{"PLEXUS_TRANSPORT", "ucx"}, {"PLEXUS_TIMEOUT_MS", "30000"},
                 {"PLEXUS_FI_HMEM", "3"}};
  for (const EnvList& env : {with_hmem_setting("3"), ucx}) {
    auto outcomes = run_ranks(
        1,
        [](int rank) {
          plx_comm_t comm = nullptr;
          const plx_result_t rc = plx_comm_init_from_env(&comm);
          const std::string message = plx_get_last_error(nullptr);
          if (rc != PLX_ERROR_INVALID_ARGUMENT ||
              message.find("rank 0: PLEXUS_FI_HMEM=3 is not an integer in 0..2") ==
                  std::string::npos) {
            return rank_failure(rank, std::string("plx_comm_init_from_env: ") +
                                          plx_get_error_string(rc) + " \"" + message + "\"");
          }
          return comm == nullptr ? 0 : rank_failure(rank, "comm written on failure");
        },
        60, env);
    std::string why;
    EXPECT_TRUE(all_passed(outcomes, &why))
        << env[0].first << "=" << env[0].second << ": " << why;
  }
}

// hmem_variant keeps the provider and the domain of the entry it is given, or gives nothing.
TEST(OfiHmem, AskingForHmemKeepsTheProvider) {
  for (const std::string provider : {"shm", "tcp"}) {
    auto outcome = run_ranks(1, [&](int) {
      comm::ofi::InfoPtr hints = comm::ofi::make_hints(provider);
      fi_info* list = nullptr;
      if (fi_getinfo(comm::ofi::api_version(), nullptr, nullptr, 0, hints.get(), &list) != 0) {
        return 0;  // not here at all: nothing to keep
      }
      comm::ofi::InfoPtr owned(list);
      for (const fi_info* chosen = list; chosen; chosen = chosen->next) {
        comm::ofi::InfoPtr variant = comm::ofi::hmem_variant(*chosen);
        if (!variant) continue;
        const std::string want_provider = chosen->fabric_attr->prov_name;
        const std::string want_domain = chosen->domain_attr->name ? chosen->domain_attr->name : "";
        const std::string got_provider = variant->fabric_attr->prov_name;
        const std::string got_domain = variant->domain_attr->name ? variant->domain_attr->name : "";
        if (got_provider != want_provider || got_domain != want_domain ||
            variant->addr_format != chosen->addr_format || (variant->caps & FI_HMEM) == 0) {
          return rank_failure(0, provider + ": FI_HMEM variant of " + want_provider + " on " +
                                     want_domain + " is " + got_provider + " on " + got_domain);
        }
      }
      return 0;
    });
    std::string why;
    EXPECT_TRUE(all_passed(outcome, &why)) << provider << ": " << why;
  }
}

}  // namespace
}  // namespace plexus::test
