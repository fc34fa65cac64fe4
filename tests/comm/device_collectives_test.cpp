// device_collectives_test.cpp - every collective on device buffers, stream-ordered, on real
// multi-process worlds sharing one GPU (issue 6, comm/device/device_collective.h).
//
// The ranks are fresh processes (this binary run again with PLX_DEVICE_TEST_CASE set, through
// tests/support/subprocess.h): a forked child of a process that initialised CUDA cannot use
// CUDA, and PLX_REQUIRE_GPU() initialises it here. Every rank uses device 0, so 2 and 4 ranks
// share one GPU. PLEXUS_CHUNK_BYTES=65536 makes the IPC slots 256 KiB, so 1000003 elements go
// through many pieces, with a short last one, and both buffers of every slot.
//
//   cuda_ipc (default peer memory): allreduce of every datatype with sum, avg and max at counts
//     0, 1 and 1000003, inputs written on the stream just before the call and results read on it
//     after (the stream order is what is tested), plx_comm_last_algorithm "allreduce:cuda_ipc";
//     in place; a pre-multiplied sum; reduce, broadcast, reduce_scatter and allgather of every
//     datatype (sum, avg and max for the reductions) at counts 1, 17 and 300007 per block (many
//     pieces, a short last one, never a multiple of a part), in place and not, with roots that
//     change with the count, a pre-multiplied sum for reduce and reduce_scatter, each required
//     to run as "<collective>:cuda_ipc"; then reduce, broadcast, reduce_scatter, allgather,
//     alltoall, alltoallv, gather, scatter and send/recv on device buffers once more (the last
//     five staged), each against its closed form; host buffers with a stream, managed buffers
//     with NULL; the errors: host and device buffers mixed (blocking, in a non-blocking call, in
//     a group).
//   staged (PLEXUS_SHM=0): the same calls through pinned host staging, never cuda_ipc, with the
//     same results.
#include <cuda_runtime.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "plexus/plexus.h"
#include "tests/comm/collective_reference.h"
#include "tests/comm/device_rank.h"
#include "tests/comm/transport_cases.h"
#include "tests/support/gpu_available.h"
#include "tests/support/multiprocess.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

constexpr size_t kBig = 1000003;  // a prime: never a multiple of a piece or of n

// ---- the rank side --------------------------------------------------------------------------

class Rank : public DeviceRank {
 public:
  using DeviceRank::DeviceRank;

  void allreduce_cases(bool expect_ipc);
  void ipc_collective_cases(bool expect_ipc);
  void other_collectives();
  void host_kinds();
  void errors();
  // The call just made ran as "<collective>:cuda_ipc" exactly when expect_ipc.
  void expect_path(const std::string& what, const std::string& collective, bool expect_ipc) {
    const std::string algorithm = last_algorithm();
    if ((algorithm == collective + ":cuda_ipc") != expect_ipc) fail(what + ": ran as " + algorithm);
  }
  // Checks count elements at dev (read on the stream) against a periodic pattern.
  void check_device(const std::string& what, const void* dev, size_t count, plx_datatype_t dt,
                    const std::vector<unsigned char>& pattern) {
    const auto got = get(dev, count * plx_datatype_size(dt));
    const std::string why = check_periodic(got.data(), count, dt, pattern);
    if (!why.empty()) fail(what + ": " + why);
  }
};

void Rank::allreduce_cases(bool expect_ipc) {
  DeviceBytes send(kBig * 8), recv(kBig * 8);
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc of the allreduce buffers");
    return;
  }
  for (int d = 0; d < PLX_NUM_DATATYPES; ++d) {
    const auto dt = static_cast<plx_datatype_t>(d);
    const size_t elem = plx_datatype_size(dt);
    for (plx_red_op_t op : {PLX_SUM, PLX_AVG, PLX_MAX}) {
      for (size_t count : {size_t{0}, size_t{1}, kBig}) {
        for (bool in_place : {false, true}) {
          if (in_place && count != kBig) continue;
          const std::string what = std::string("allreduce ") + datatype_name(dt) + " " +
                                   op_name(op) + " count " + std::to_string(count) +
                                   (in_place ? " in place" : "");
          std::vector<unsigned char> input(count * elem);
          fill_periodic(input.data(), count, elem, input_pattern(op, dt, r_));
          void* out = in_place ? send.ptr : recv.ptr;
          if (!put(send.ptr, input) || (!in_place && !poison(recv.ptr, count * elem))) return;
          if (!ok(plx_allreduce(send.ptr, out, count, dt, op, comm_, stream_), what)) continue;
          const auto got = get(out, count * elem);
          const std::string why = check_periodic(got.data(), count, dt, expected_pattern(op, dt, n_));
          if (!why.empty()) fail(what + ": " + why);
          const char* algorithm = "";
          plx_comm_last_algorithm(comm_, &algorithm);
          if (count > 0 && expect_ipc != (std::string(algorithm) == "allreduce:cuda_ipc")) {
            fail(what + ": ran as " + algorithm);
          }
        }
      }
    }
  }
  // A pre-multiplied sum: every input scaled by 2 first.
  plx_red_op_t premul;
  const float two = 2.0f;
  if (!ok(plx_red_op_create_premul_sum(&premul, &two, PLX_FLOAT32, comm_), "premul create")) return;
  std::vector<unsigned char> input(kBig * 4);
  fill_periodic(input.data(), kBig, 4, input_pattern(PLX_SUM, PLX_FLOAT32, r_));
  if (put(send.ptr, input) &&
      ok(plx_allreduce(send.ptr, recv.ptr, kBig, PLX_FLOAT32, premul, comm_, stream_),
         "premul allreduce")) {
    const auto got = get(recv.ptr, kBig * 4);
    const auto sum = expected_pattern(PLX_SUM, PLX_FLOAT32, n_);
    std::vector<unsigned char> doubled(sum.size());
    for (size_t i = 0; i < sum.size(); i += 4) {
      float v;
      std::memcpy(&v, &sum[i], 4);
      v *= 2;
      std::memcpy(&doubled[i], &v, 4);
    }
    const std::string why = check_periodic(got.data(), kBig, PLX_FLOAT32, doubled);
    if (!why.empty()) fail("premul allreduce: " + why);
  }
  plx_red_op_destroy(premul, comm_);
}

// A periodic pattern of float32 values, each doubled (a pre-multiplied sum with scalar 2).
std::vector<unsigned char> doubled_float32(const std::vector<unsigned char>& pattern) {
  std::vector<unsigned char> out(pattern.size());
  for (size_t i = 0; i < pattern.size(); i += 4) {
    float v;
    std::memcpy(&v, &pattern[i], 4);
    v *= 2;
    std::memcpy(&out[i], &v, 4);
  }
  return out;
}

// reduce, reduce_scatter, broadcast and allgather: the calls with a CUDA IPC path besides
// allreduce (comm/device/ipc_schedule.h). Per block, 300007 elements of every datatype cross
// several 256 KiB slot pieces (PLEXUS_CHUNK_BYTES=65536) and end on a short one.
void Rank::ipc_collective_cases(bool expect_ipc) {
  constexpr size_t kBlock = 300007;
  const size_t n = static_cast<size_t>(n_), r = static_cast<size_t>(r_);
  DeviceBytes send(kBlock * n * 8), recv(kBlock * n * 8);
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc of the IPC collective buffers");
    return;
  }
  for (int d = 0; d < PLX_NUM_DATATYPES; ++d) {
    const auto dt = static_cast<plx_datatype_t>(d);
    const size_t elem = plx_datatype_size(dt);
    for (size_t count : {size_t{1}, size_t{17}, kBlock}) {
      const int root = static_cast<int>(count % n);
      for (bool in_place : {false, true}) {
        if (in_place && count != kBlock) continue;
        const std::string how = std::string(" ") + datatype_name(dt) + " count " +
                                std::to_string(count) + " root " + std::to_string(root) +
                                (in_place ? " in place" : "");
        for (plx_red_op_t op : {PLX_SUM, PLX_AVG, PLX_MAX}) {
          const std::string with = how + " " + op_name(op);
          const auto input = input_pattern(op, dt, r_);
          const auto expected = expected_pattern(op, dt, n_);
          // reduce to the root; in place, the root's recvbuf is its sendbuf
          std::vector<unsigned char> in(count * elem);
          fill_periodic(in.data(), count, elem, input);
          void* out = in_place && r_ == root ? send.ptr : recv.ptr;
          if (!put(send.ptr, in) || !poison(recv.ptr, count * elem)) return;
          if (ok(plx_reduce(send.ptr, out, count, dt, op, root, comm_, stream_),
                 "reduce" + with)) {
            if (r_ == root) check_device("reduce" + with, out, count, dt, expected);
            expect_path("reduce" + with, "reduce", expect_ipc);
          }
          // reduce_scatter: block r of n; in place, recvbuf is block r of sendbuf
          std::vector<unsigned char> all(n * count * elem);
          fill_periodic(all.data(), n * count, elem, input);
          void* block = in_place ? static_cast<void*>(send.at(r * count * elem)) : recv.ptr;
          if (!put(send.ptr, all) || (!in_place && !poison(recv.ptr, count * elem))) return;
          if (ok(plx_reduce_scatter(send.ptr, block, count, dt, op, comm_, stream_),
                 "reduce_scatter" + with)) {
            check_device("reduce_scatter" + with, block, count, dt,
                         shifted(expected, elem, (r * count) % input_period(op)));
            expect_path("reduce_scatter" + with, "reduce_scatter", expect_ipc);
          }
        }
        // broadcast from the root; in place, every rank passes one buffer
        std::vector<unsigned char> payload(count * elem);
        fill_periodic(payload.data(), count, elem, broadcast_pattern(dt, root));
        void* bout = in_place ? send.ptr : recv.ptr;
        if (!poison(send.ptr, count * elem) || !poison(recv.ptr, count * elem)) return;
        if (r_ == root && !put(send.ptr, payload)) return;
        if (ok(plx_broadcast(send.ptr, bout, count, dt, root, comm_, stream_),
               "broadcast" + how)) {
          check_device("broadcast" + how, bout, count, dt, broadcast_pattern(dt, root));
          expect_path("broadcast" + how, "broadcast", expect_ipc);
        }
        // allgather: block q of every rank is rank q's broadcast_pattern; in place, sendbuf is
        // block r of recvbuf
        std::vector<unsigned char> mine(count * elem);
        fill_periodic(mine.data(), count, elem, broadcast_pattern(dt, r_));
        const void* gin = in_place ? static_cast<void*>(recv.at(r * count * elem)) : send.ptr;
        if (!poison(recv.ptr, n * count * elem) || !put(const_cast<void*>(gin), mine)) return;
        if (ok(plx_allgather(gin, recv.ptr, count, dt, comm_, stream_), "allgather" + how)) {
          for (int q = 0; q < n_; ++q) {
            check_device("allgather" + how + " block " + std::to_string(q),
                         recv.at(static_cast<size_t>(q) * count * elem), count, dt,
                         broadcast_pattern(dt, q));
          }
          expect_path("allgather" + how, "allgather", expect_ipc);
        }
      }
    }
  }
  // Pre-multiplied sums (scalar 2) in reduce and reduce_scatter.
  plx_red_op_t premul;
  const float two = 2.0f;
  if (!ok(plx_red_op_create_premul_sum(&premul, &two, PLX_FLOAT32, comm_), "premul create")) return;
  const auto input = input_pattern(PLX_SUM, PLX_FLOAT32, r_);
  const auto twice = doubled_float32(expected_pattern(PLX_SUM, PLX_FLOAT32, n_));
  std::vector<unsigned char> all(n * kBlock * 4);
  fill_periodic(all.data(), n * kBlock, 4, input);
  if (put(send.ptr, all) && poison(recv.ptr, kBlock * 4) &&
      ok(plx_reduce(send.ptr, recv.ptr, kBlock, PLX_FLOAT32, premul, 0, comm_, stream_),
         "premul reduce")) {
    if (r_ == 0) check_device("premul reduce", recv.ptr, kBlock, PLX_FLOAT32, twice);
    expect_path("premul reduce", "reduce", expect_ipc);
  }
  if (put(send.ptr, all) && poison(recv.ptr, kBlock * 4) &&
      ok(plx_reduce_scatter(send.ptr, recv.ptr, kBlock, PLX_FLOAT32, premul, comm_, stream_),
         "premul reduce_scatter")) {
    check_device("premul reduce_scatter", recv.ptr, kBlock, PLX_FLOAT32,
                 shifted(twice, 4, (r * kBlock) % input_period(PLX_SUM)));
    expect_path("premul reduce_scatter", "reduce_scatter", expect_ipc);
  }
  plx_red_op_destroy(premul, comm_);
}

// Value of rank q's element i in the block collectives: exact in int32.
int32_t block_value(int q, size_t i) { return static_cast<int32_t>(q * 1000003 + i % 100003); }

std::vector<unsigned char> int32s(size_t count, const std::function<int32_t(size_t)>& f) {
  std::vector<unsigned char> out(count * 4);
  for (size_t i = 0; i < count; ++i) {
    const int32_t v = f(i);
    std::memcpy(&out[i * 4], &v, 4);
  }
  return out;
}

void Rank::other_collectives() {
  const size_t c = 100003;  // per block
  const size_t nc = c * static_cast<size_t>(n_);
  DeviceBytes send(nc * 4), recv(nc * 4);
  if (!send.ptr || !recv.ptr) {
    fail("cudaMalloc of the block buffers");
    return;
  }
  const int root = n_ - 1;
  const auto check = [&](const std::string& what, const void* dev, size_t count,
                         const std::function<int32_t(size_t)>& want) {
    const auto got = get(dev, count * 4);
    const auto expected = int32s(count, want);
    for (size_t i = 0; i < count; ++i) {
      if (std::memcmp(&got[i * 4], &expected[i * 4], 4) != 0) {
        int32_t g, w;
        std::memcpy(&g, &got[i * 4], 4);
        std::memcpy(&w, &expected[i * 4], 4);
        fail(what + ": index " + std::to_string(i) + ": got " + std::to_string(g) + ", want " +
             std::to_string(w));
        return;
      }
    }
  };
  // reduce: sum over ranks of (q * 1000003 + i % 100003), at the root
  put(send.ptr, int32s(c, [&](size_t i) { return block_value(r_, i); }));
  poison(recv.ptr, c * 4);
  const int32_t rank_sum = static_cast<int32_t>(1000003LL * n_ * (n_ - 1) / 2);
  if (ok(plx_reduce(send.ptr, recv.ptr, c, PLX_INT32, PLX_SUM, root, comm_, stream_), "reduce") &&
      r_ == root) {
    check("reduce", recv.ptr, c,
          [&](size_t i) { return rank_sum + static_cast<int32_t>(n_ * (i % 100003)); });
  }
  // broadcast from the root, in place
  put(send.ptr, int32s(c, [&](size_t i) { return r_ == root ? block_value(root, i) : -1; }));
  if (ok(plx_broadcast(send.ptr, send.ptr, c, PLX_INT32, root, comm_, stream_), "broadcast")) {
    check("broadcast", send.ptr, c, [&](size_t i) { return block_value(root, i); });
  }
  // reduce_scatter: block b of rank q holds q * 1000003 + (b * c + i) % 100003
  put(send.ptr, int32s(nc, [&](size_t i) { return block_value(r_, i); }));
  poison(recv.ptr, c * 4);
  if (ok(plx_reduce_scatter(send.ptr, recv.ptr, c, PLX_INT32, PLX_SUM, comm_, stream_),
         "reduce_scatter")) {
    check("reduce_scatter", recv.ptr, c, [&](size_t i) {
      return rank_sum + static_cast<int32_t>(n_ * ((static_cast<size_t>(r_) * c + i) % 100003));
    });
  }
  // allgather, in place: block q of every rank = rank q's block
  put(send.ptr, int32s(nc, [&](size_t i) { return i / c == static_cast<size_t>(r_) ?
                                                     block_value(r_, i % c) : -1; }));
  if (ok(plx_allgather(send.at(static_cast<size_t>(r_) * c * 4), send.ptr, c, PLX_INT32, comm_,
                       stream_),
         "allgather in place")) {
    check("allgather", send.ptr, nc,
          [&](size_t i) { return block_value(static_cast<int>(i / c), i % c); });
  }
  // alltoall: block j of rank q's send -> block q of rank j's recv; value q * 1000003 + j * c + i
  put(send.ptr, int32s(nc, [&](size_t i) { return block_value(r_, i); }));
  poison(recv.ptr, nc * 4);
  if (ok(plx_alltoall(send.ptr, recv.ptr, c, PLX_INT32, comm_, stream_), "alltoall")) {
    check("alltoall", recv.ptr, nc, [&](size_t i) {
      return block_value(static_cast<int>(i / c), static_cast<size_t>(r_) * c + i % c);
    });
  }
  // alltoallv: rank q sends 1 + q elements to everyone, into blocks of c; the rest of recv stays
  std::vector<size_t> scounts(n_), sdispls(n_), rcounts(n_), rdispls(n_);
  for (int j = 0; j < n_; ++j) {
    scounts[j] = 1 + static_cast<size_t>(r_);
    sdispls[j] = static_cast<size_t>(j) * c;
    rcounts[j] = 1 + static_cast<size_t>(j);
    rdispls[j] = static_cast<size_t>(j) * c;
  }
  put(send.ptr, int32s(nc, [&](size_t i) { return block_value(r_, i); }));
  put(recv.ptr, int32s(nc, [&](size_t) { return -7; }));
  if (ok(plx_alltoallv(send.ptr, scounts.data(), sdispls.data(), recv.ptr, rcounts.data(),
                       rdispls.data(), PLX_INT32, comm_, stream_),
         "alltoallv")) {
    check("alltoallv", recv.ptr, nc, [&](size_t i) {
      const size_t q = i / c, k = i % c;
      return k <= q ? block_value(static_cast<int>(q), static_cast<size_t>(r_) * c + k) : -7;
    });
  }
  // gather at the root, then scatter from it
  put(send.ptr, int32s(c, [&](size_t i) { return block_value(r_, i); }));
  poison(recv.ptr, nc * 4);
  if (ok(plx_gather(send.ptr, recv.ptr, c, PLX_INT32, root, comm_, stream_), "gather") &&
      r_ == root) {
    check("gather", recv.ptr, nc,
          [&](size_t i) { return block_value(static_cast<int>(i / c), i % c); });
  }
  put(send.ptr, int32s(nc, [&](size_t i) { return block_value(root, i); }));
  poison(recv.ptr, c * 4);
  if (ok(plx_scatter(send.ptr, recv.ptr, c, PLX_INT32, root, comm_, stream_), "scatter")) {
    check("scatter", recv.ptr, c,
          [&](size_t i) { return block_value(root, static_cast<size_t>(r_) * c + i); });
  }
  // send/recv between pairs (0,1), (2,3): the even rank sends first
  const int peer = r_ ^ 1;
  if (peer < n_) {
    put(send.ptr, int32s(c, [&](size_t i) { return block_value(r_, i); }));
    poison(recv.ptr, c * 4);
    bool done = false;
    if (r_ % 2 == 0) {
      done = ok(plx_send(send.ptr, c, PLX_INT32, peer, comm_, stream_), "send") &&
             ok(plx_recv(recv.ptr, c, PLX_INT32, peer, comm_, stream_), "recv");
    } else {
      done = ok(plx_recv(recv.ptr, c, PLX_INT32, peer, comm_, stream_), "recv") &&
             ok(plx_send(send.ptr, c, PLX_INT32, peer, comm_, stream_), "send");
    }
    if (done) check("send/recv", recv.ptr, c, [&](size_t i) { return block_value(peer, i); });
  }
}

void Rank::host_kinds() {
  // Host buffers with a stream: the call waits for the stream, then runs on the host.
  const size_t count = 1001;
  std::vector<unsigned char> in(count * 4), out(count * 4);
  fill_periodic(in.data(), count, 4, input_pattern(PLX_SUM, PLX_INT32, r_));
  if (ok(plx_allreduce(in.data(), out.data(), count, PLX_INT32, PLX_SUM, comm_, stream_),
         "allreduce on host buffers with a stream")) {
    const std::string why =
        check_periodic(out.data(), count, PLX_INT32, expected_pattern(PLX_SUM, PLX_INT32, n_));
    if (!why.empty()) fail("host buffers with a stream: " + why);
  }
  // Managed buffers with NULL: host memory (as the engine passes them).
  DeviceBytes managed(count * 4, true);
  if (!managed.ptr) {
    fail("cudaMallocManaged");
    return;
  }
  if (!cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize")) return;
  std::memcpy(managed.ptr, in.data(), in.size());
  if (ok(plx_allreduce(managed.ptr, managed.ptr, count, PLX_INT32, PLX_SUM, comm_, nullptr),
         "allreduce on managed buffers")) {
    const std::string why = check_periodic(managed.at(), count, PLX_INT32,
                                           expected_pattern(PLX_SUM, PLX_INT32, n_));
    if (!why.empty()) fail("managed buffers: " + why);
  }
}

void Rank::errors() {
  DeviceBytes dev(64);
  std::vector<int32_t> host(16, 1);
  const std::string r = "rank " + std::to_string(r_) + ": ";
  // Mixed kinds: refused on the calling rank, before anything is sent.
  expect_error(plx_allreduce(host.data(), dev.ptr, 5, PLX_INT32, PLX_SUM, comm_, stream_),
               PLX_ERROR_INVALID_ARGUMENT, "plx_allreduce: " + r + "sendbuf ",
               "is host memory but recvbuf");
  expect_error(plx_broadcast(dev.ptr, host.data(), 5, PLX_INT32, r_, comm_, nullptr),
               PLX_ERROR_INVALID_ARGUMENT, "plx_broadcast: " + r + "sendbuf ",
               "is device memory but recvbuf");
  // Non-blocking forms and groups take device buffers (tests/comm/device_async_test.cpp); mixed
  // kinds are refused there too, before anything is queued.
  plx_request_t request = nullptr;
  expect_error(plx_iallreduce(host.data(), dev.ptr, 5, PLX_INT32, PLX_SUM, comm_, &request),
               PLX_ERROR_INVALID_ARGUMENT, "plx_iallreduce: " + r + "sendbuf ",
               "is host memory but recvbuf");
  if (request != nullptr) fail("a refused plx_iallreduce wrote its request");
  ok(plx_group_start(), "plx_group_start");
  expect_error(plx_allreduce(dev.ptr, host.data(), 5, PLX_INT32, PLX_SUM, comm_, stream_),
               PLX_ERROR_INVALID_ARGUMENT, "plx_allreduce: " + r + "sendbuf ",
               "is device memory but recvbuf");
  ok(plx_group_end(), "plx_group_end of an empty group");
  // The communicator is still usable: one more allreduce on device buffers.
  std::vector<unsigned char> input(5 * 4);
  fill_periodic(input.data(), 5, 4, input_pattern(PLX_SUM, PLX_INT32, r_));
  if (put(dev.ptr, input) &&
      ok(plx_allreduce(dev.ptr, dev.ptr, 5, PLX_INT32, PLX_SUM, comm_, stream_),
         "allreduce after the errors")) {
    const auto got = get(dev.ptr, 5 * 4);
    const std::string why =
        check_periodic(got.data(), 5, PLX_INT32, expected_pattern(PLX_SUM, PLX_INT32, n_));
    if (!why.empty()) fail("allreduce after the errors: " + why);
  }
}

// One rank of the world described by the environment; `expect_ipc` is whether allreduce must
// run through CUDA IPC.
int rank_main(bool expect_ipc) {
  const int rank = std::atoi(std::getenv("PLEXUS_RANK"));
  const int n = std::atoi(std::getenv("PLEXUS_WORLD_SIZE"));
  cudaStream_t stream = nullptr;
  if (const std::string failed = start_device_rank(&stream); !failed.empty()) {
    return rank_failure(rank, failed);
  }
  plx_comm_t comm = nullptr;
  const std::string why = init_world(n, "tcp", &comm);
  if (!why.empty()) return rank_failure(rank, why);
  Rank me(rank, n, comm, stream);
  me.allreduce_cases(expect_ipc);
  me.ipc_collective_cases(expect_ipc);
  me.other_collectives();
  me.host_kinds();
  me.errors();
  const int code = finish_rank(rank, comm, me.failures());
  cudaStreamDestroy(stream);
  return code;
}

// ---- the test side --------------------------------------------------------------------------

// Runs this binary as n ranks of one world running `which`, and checks they all pass.
void run_world(int n, const std::string& which, const EnvList& extra) {
  EnvList env = transport_env("tcp", 60000);
  env.push_back({"PLEXUS_CHUNK_BYTES", "65536"});
  env.insert(env.end(), extra.begin(), extra.end());
  const auto ranks = start_self_world(n, "PLX_DEVICE_TEST_CASE=" + which, env);
  for (int r = 0; r < n; ++r) {
    const ProcessResult result = ranks[r]->wait(240.0);
    EXPECT_TRUE(result.exited && result.exit_code == 0)
        << which << " world of " << n << ", rank " << r << ": "
        << (result.timed_out ? "timed out" : "exit code " + std::to_string(result.exit_code))
        << "\n" << result.err << result.out;
  }
}

TEST(DeviceCollectives, CudaIpcTwoRanksOneGpu) {
  PLX_REQUIRE_GPU();
  run_world(2, "cuda_ipc", {});
}

TEST(DeviceCollectives, CudaIpcFourRanksOneGpu) {
  PLX_REQUIRE_GPU();
  run_world(4, "cuda_ipc", {});
}

TEST(DeviceCollectives, StagedWithoutPeerMemory) {
  PLX_REQUIRE_GPU();
  run_world(2, "staged", {{"PLEXUS_SHM", "0"}});
}

}  // namespace
}  // namespace plexus::test

int main(int argc, char** argv) {
  if (const char* which = std::getenv("PLX_DEVICE_TEST_CASE")) {
    return plexus::test::rank_main(std::string(which) == "cuda_ipc");
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
