// stream_checks_test.cpp - the stream argument where no CUDA stream can exist (issue 6; runs in
// every build, with or without CUDA, on machines without a GPU).
//
// A process that has not loaded the CUDA driver has no CUDA stream, and a libplexus built without
// CUDA takes none: every blocking call given a non-NULL stream returns PLX_ERROR_UNSUPPORTED with
// "plx_<call>: rank R: stream 0x10 is not NULL, but ..." and moves nothing; the same calls with
// NULL then succeed on the same communicator. This process never loads CUDA (nothing here calls
// it), so the answer is the same on a GPU machine. A world of one rank: the check is local.
// Bad arguments come first: they are named as bad arguments whether or not a stream is given.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "plexus/plexus.h"

namespace {

void* const kFakeStream = reinterpret_cast<void*>(0x10);

struct Call {
  std::string name;
  std::function<plx_result_t(void* stream)> run;
};

class StreamChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(plx_comm_init_from_env(&comm_), PLX_SUCCESS) << plx_get_last_error(nullptr);
  }
  void TearDown() override {
    if (comm_) {
      EXPECT_EQ(plx_comm_destroy(comm_), PLX_SUCCESS);
    }
  }

  std::vector<Call> calls() {
    counts_ = {4};
    displs_ = {0};
    return {
        {"plx_allreduce", [this](void* s) { return plx_allreduce(in_, out_, 4, PLX_INT32, PLX_SUM, comm_, s); }},
        {"plx_reduce", [this](void* s) { return plx_reduce(in_, out_, 4, PLX_INT32, PLX_SUM, 0, comm_, s); }},
        {"plx_broadcast", [this](void* s) { return plx_broadcast(in_, out_, 4, PLX_INT32, 0, comm_, s); }},
        {"plx_reduce_scatter", [this](void* s) { return plx_reduce_scatter(in_, out_, 4, PLX_INT32, PLX_SUM, comm_, s); }},
        {"plx_allgather", [this](void* s) { return plx_allgather(in_, out_, 4, PLX_INT32, comm_, s); }},
        {"plx_alltoall", [this](void* s) { return plx_alltoall(in_, out_, 4, PLX_INT32, comm_, s); }},
        {"plx_alltoallv", [this](void* s) {
           return plx_alltoallv(in_, counts_.data(), displs_.data(), out_, counts_.data(),
                                displs_.data(), PLX_INT32, comm_, s);
         }},
        {"plx_gather", [this](void* s) { return plx_gather(in_, out_, 4, PLX_INT32, 0, comm_, s); }},
        {"plx_scatter", [this](void* s) { return plx_scatter(in_, out_, 4, PLX_INT32, 0, comm_, s); }},
    };
  }

  plx_comm_t comm_ = nullptr;
  int32_t in_[4] = {1, 2, 3, 4};
  int32_t out_[4] = {0, 0, 0, 0};
  std::vector<size_t> counts_, displs_;
};

TEST_F(StreamChecks, NonNullStreamIsUnsupportedAndMovesNothing) {
  for (const Call& call : calls()) {
    out_[0] = out_[1] = out_[2] = out_[3] = -9;
    EXPECT_EQ(call.run(kFakeStream), PLX_ERROR_UNSUPPORTED) << call.name;
    const std::string message = plx_get_last_error(nullptr);
    EXPECT_EQ(message.rfind(call.name + ": rank 0: stream 0x10 is not NULL, but ", 0), 0u)
        << call.name << ": " << message;
    EXPECT_NE(message.find("pass NULL with host buffers"), std::string::npos) << message;
    EXPECT_EQ(out_[0], -9) << call.name << " wrote its output";
  }
  // Point-to-point too (a send to itself would wait for its receive: the check comes first).
  EXPECT_EQ(plx_send(in_, 4, PLX_INT32, 0, comm_, kFakeStream), PLX_ERROR_UNSUPPORTED);
  EXPECT_EQ(std::string(plx_get_last_error(nullptr)).rfind("plx_send: rank 0: stream 0x10 ", 0),
            0u)
      << plx_get_last_error(nullptr);
  EXPECT_EQ(plx_recv(out_, 4, PLX_INT32, 0, comm_, kFakeStream), PLX_ERROR_UNSUPPORTED);
  EXPECT_EQ(std::string(plx_get_last_error(nullptr)).rfind("plx_recv: rank 0: stream 0x10 ", 0),
            0u)
      << plx_get_last_error(nullptr);
}

// The arguments are checked before the stream: a bad datatype, root, peer or NULL buffer is
// PLX_ERROR_INVALID_ARGUMENT naming that argument, with a stream as without one.
TEST_F(StreamChecks, BadArgumentsAreNamedBeforeTheStream) {
  const auto bad_type = static_cast<plx_datatype_t>(99);
  const auto expect_named = [](plx_result_t result, const std::string& call,
                               const std::string& argument) {
    EXPECT_EQ(result, PLX_ERROR_INVALID_ARGUMENT) << call;
    const std::string message = plx_get_last_error(nullptr);
    EXPECT_EQ(message.rfind(call + ": rank 0: ", 0), 0u) << message;
    EXPECT_NE(message.find(argument), std::string::npos) << call << ": " << message;
  };
  for (void* stream : {kFakeStream, static_cast<void*>(nullptr)}) {
    out_[0] = -9;
    expect_named(plx_allreduce(in_, out_, 4, bad_type, PLX_SUM, comm_, stream), "plx_allreduce",
                 "datatype");
    expect_named(plx_allreduce(in_, out_, 4, PLX_INT32, static_cast<plx_red_op_t>(77), comm_,
                               stream),
                 "plx_allreduce", "op");
    expect_named(plx_allreduce(nullptr, out_, 4, PLX_INT32, PLX_SUM, comm_, stream),
                 "plx_allreduce", "sendbuf");
    expect_named(plx_reduce(in_, out_, 4, PLX_INT32, PLX_SUM, 3, comm_, stream), "plx_reduce",
                 "root 3");
    expect_named(plx_broadcast(in_, out_, 4, PLX_INT32, -1, comm_, stream), "plx_broadcast",
                 "root -1");
    expect_named(plx_allgather(in_, nullptr, 4, PLX_INT32, comm_, stream), "plx_allgather",
                 "recvbuf");
    expect_named(plx_send(in_, 4, PLX_INT32, 5, comm_, stream), "plx_send", "peer 5");
    expect_named(plx_recv(out_, 4, bad_type, 0, comm_, stream), "plx_recv", "datatype");
    EXPECT_EQ(out_[0], -9) << "a refused call wrote its output";
  }
  // Good arguments with the stream still meet the stream's refusal, and nothing was numbered:
  // the next host call runs.
  EXPECT_EQ(plx_allreduce(in_, out_, 4, PLX_INT32, PLX_SUM, comm_, kFakeStream),
            PLX_ERROR_UNSUPPORTED);
  ASSERT_EQ(plx_allreduce(in_, out_, 4, PLX_INT32, PLX_SUM, comm_, nullptr), PLX_SUCCESS)
      << plx_get_last_error(nullptr);
  EXPECT_EQ(out_[3], 4);
}

TEST_F(StreamChecks, NullStreamStillRunsOnTheHost) {
  for (const Call& call : calls()) {
    out_[0] = out_[1] = out_[2] = out_[3] = -9;
    ASSERT_EQ(call.run(nullptr), PLX_SUCCESS) << call.name << ": " << plx_get_last_error(nullptr);
    // One rank: every collective leaves the input's values in the output.
    for (int i = 0; i < 4; ++i) EXPECT_EQ(out_[i], in_[i]) << call.name << " index " << i;
  }
}

TEST_F(StreamChecks, StreamInsideAGroupIsRefusedToo) {
  ASSERT_EQ(plx_group_start(), PLX_SUCCESS);
  EXPECT_EQ(plx_allreduce(in_, out_, 4, PLX_INT32, PLX_SUM, comm_, kFakeStream),
            PLX_ERROR_UNSUPPORTED);
  EXPECT_EQ(std::string(plx_get_last_error(nullptr)).rfind("plx_allreduce: rank 0: stream ", 0),
            0u)
      << plx_get_last_error(nullptr);
  EXPECT_EQ(plx_group_end(), PLX_SUCCESS);  // nothing was queued
}

}  // namespace
