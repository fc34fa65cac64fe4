// staged_pipeline_test.cpp - the schedule of the pipelined staged path
// (comm/device/staged_pipeline.h) on the CPU, with host copies in place of CUDA's.
//
// HostCopies does each copy with memcpy on a helper thread per direction (as the copy stream and
// the caller's stream), so completion is asynchronous, and checks the protocol the CUDA copies
// rely on: a copy into a ring slot starts only once the slot's previous copy out was waited
// for, the host run reads a chunk only after its copy in was waited for, and every copy out is
// waited for before the call returns. The host run is an element-wise map (y = 3x + 1 on int32),
// so every result has a closed form.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm/device/staged_pipeline.h"

namespace plexus::comm::device {
namespace {

constexpr size_t kChunk = 1000;  // elements per chunk in these tests (int32)

int32_t input_value(size_t i) { return static_cast<int32_t>(i * 7 + 3); }
int32_t mapped(int32_t x) { return 3 * x + 1; }
int32_t recv_value(size_t i) { return static_cast<int32_t>(1000000 + i); }

// Where a copy or the host run fails on purpose.
enum class Step { None, StartIn, WaitIn, StartOut, WaitOut, Run };

// One direction's "stream": a helper thread doing queued memcpys in order.
class CopyQueue {
 public:
  CopyQueue() : thread_([this] { loop(); }) {}
  ~CopyQueue() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  CopyQueue(const CopyQueue&) = delete;
  CopyQueue& operator=(const CopyQueue&) = delete;

  // Queues a copy of chunk k; `result` is what its wait will return.
  void push(size_t k, void* dst, const void* src, size_t bytes, plx_result_t result) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(Job{k, dst, src, bytes, result});
    cv_.notify_all();
  }
  // Waits (at most 10 s) until chunk k's copy is done; its result, or PLX_ERROR_TIMEOUT.
  plx_result_t wait(size_t k) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return done_.count(k) > 0; })) {
      return PLX_ERROR_TIMEOUT;
    }
    return done_[k];
  }
  // Waits (at most 10 s) until nothing is queued or running.
  void drain() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait_for(lock, std::chrono::seconds(10), [&] { return jobs_.empty() && !busy_; });
  }
  size_t pending() {
    std::lock_guard<std::mutex> lock(mutex_);
    return jobs_.size() + (busy_ ? 1 : 0);
  }

 private:
  struct Job {
    size_t k;
    void* dst;
    const void* src;
    size_t bytes;
    plx_result_t result;
  };
  void loop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stop_ with nothing left
      const Job job = jobs_.front();
      jobs_.pop_front();
      busy_ = true;
      lock.unlock();
      std::this_thread::yield();  // let the scheduler run ahead of the copy now and then
      if (job.result == PLX_SUCCESS) std::memcpy(job.dst, job.src, job.bytes);
      lock.lock();
      busy_ = false;
      done_[job.k] = job.result;
      cv_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::map<size_t, plx_result_t> done_;
  bool busy_ = false;
  bool stop_ = false;
  std::thread thread_;  // last: starts once the members above exist
};

// The copies of one call, with the protocol checks and the failure injection.
class HostCopies final : public ChunkCopies {
 public:
  HostCopies(const StagedChunks& chunks, Step fail_step, size_t fail_k)
      : chunks_(chunks), fail_step_(fail_step), fail_k_(fail_k) {}

  plx_result_t start_copy_in(size_t k) override {
    events_.push_back("start_in " + std::to_string(k));
    if (failing(Step::StartIn, k)) return PLX_ERROR_SYSTEM;
    check_slot_free(k, "start_copy_in");
    if (!chunks_.stage_send || chunks_.bytes(k) == 0) return PLX_SUCCESS;
    in_.push(k, chunks_.staged_send(k), chunks_.device_send(k), chunks_.bytes(k),
             failing(Step::WaitIn, k) ? PLX_ERROR_SYSTEM : PLX_SUCCESS);
    return PLX_SUCCESS;
  }
  plx_result_t wait_copy_in(size_t k) override {
    events_.push_back("wait_in " + std::to_string(k));
    if (!chunks_.stage_send || chunks_.bytes(k) == 0) {
      waited_in_.push_back(k);
      return PLX_SUCCESS;
    }
    const plx_result_t rc = in_.wait(k);
    if (rc == PLX_SUCCESS) waited_in_.push_back(k);
    return rc;
  }
  plx_result_t start_copy_out(size_t k) override {
    events_.push_back("start_out " + std::to_string(k));
    if (failing(Step::StartOut, k)) return PLX_ERROR_SYSTEM;
    if (!chunks_.stage_recv || chunks_.bytes(k) == 0) return PLX_SUCCESS;
    out_.push(k, chunks_.device_recv(k), chunks_.staged_recv(k), chunks_.bytes(k),
              failing(Step::WaitOut, k) ? PLX_ERROR_SYSTEM : PLX_SUCCESS);
    return PLX_SUCCESS;
  }
  plx_result_t wait_copy_out(size_t k) override {
    events_.push_back("wait_out " + std::to_string(k));
    if (!chunks_.stage_recv || chunks_.bytes(k) == 0) {
      waited_out_.push_back(k);
      return PLX_SUCCESS;
    }
    const plx_result_t rc = out_.wait(k);
    if (rc == PLX_SUCCESS) waited_out_.push_back(k);
    return rc;
  }
  void cancel() override {
    ++cancels_;
    in_.drain();
    out_.drain();
  }

  // Checks made by the host run of chunk k.
  void check_run(size_t k) {
    if (!contains(waited_in_, k)) violations_.push_back("ran chunk " + std::to_string(k) +
                                                        " before waiting for its copy in");
    check_slot_free(k, "run (writes the slot's receive area)");
  }

  bool failing(Step step, size_t k) const { return fail_step_ == step && fail_k_ == k; }
  size_t pending() { return in_.pending() + out_.pending(); }
  const std::vector<size_t>& waited_out() const { return waited_out_; }
  const std::vector<std::string>& violations() const { return violations_; }
  const std::vector<std::string>& events() const { return events_; }
  int cancels() const { return cancels_; }

 private:
  static bool contains(const std::vector<size_t>& v, size_t k) {
    for (size_t x : v) {
      if (x == k) return true;
    }
    return false;
  }
  // Chunk k reuses the slot of chunk k - depth: that chunk's copy out must have been waited for.
  void check_slot_free(size_t k, const char* what) {
    if (k >= kStagingDepth && !contains(waited_out_, k - kStagingDepth)) {
      violations_.push_back(std::string(what) + " of chunk " + std::to_string(k) +
                            " before the copy out of chunk " +
                            std::to_string(k - kStagingDepth) + " was waited for");
    }
  }

  const StagedChunks& chunks_;
  Step fail_step_;
  size_t fail_k_;
  CopyQueue in_;
  CopyQueue out_;
  std::vector<size_t> waited_in_;
  std::vector<size_t> waited_out_;
  std::vector<std::string> violations_;
  std::vector<std::string> events_;
  int cancels_ = 0;
};

enum class Layout { OutOfPlace, InPlace, SendOnly, RecvOnly };

const char* layout_name(Layout layout) {
  switch (layout) {
    case Layout::OutOfPlace: return "out of place";
    case Layout::InPlace: return "in place";
    case Layout::SendOnly: return "send only";
    case Layout::RecvOnly: return "recv only";
  }
  return "?";
}

// One call: the caller's "device" buffers, the ring, the copies and what the host run saw.
struct Call {
  Call(size_t count, Layout layout, Step fail_step = Step::None, size_t fail_k = 0)
      : layout(layout), send(count), recv(count, -7) {
    for (size_t i = 0; i < count; ++i) send[i] = input_value(i);
    chunks.count = count;
    chunks.elem_bytes = sizeof(int32_t);
    chunks.chunk_elems = kChunk;
    chunks.stage_send = layout != Layout::RecvOnly;
    chunks.stage_recv = layout != Layout::SendOnly;
    chunks.send = send.data();
    chunks.recv = layout == Layout::InPlace ? send.data() : recv.data();
    ring.assign(chunks.ring_bytes(), 0xee);
    chunks.ring = ring.data();
    copies = std::make_unique<HostCopies>(chunks, fail_step, fail_k);
  }

  plx_result_t run() {
    return run_staged_pipeline(chunks, *copies, [&](const void* s, void* r, size_t n) {
      const size_t k = runs.size();
      runs.push_back(n);
      copies->check_run(k);
      const size_t first = k * kChunk;
      if (first != seen) violations.push_back("chunk " + std::to_string(k) + " out of order");
      seen += n;
      if (layout != Layout::RecvOnly && !in_ring(s, n)) {
        violations.push_back("chunk " + std::to_string(k) + ": sendbuf outside the ring");
      }
      if (layout != Layout::SendOnly && !in_ring(r, n)) {
        violations.push_back("chunk " + std::to_string(k) + ": recvbuf outside the ring");
      }
      if (layout == Layout::InPlace && s != r) {
        violations.push_back("chunk " + std::to_string(k) + ": in place, but send != recv");
      }
      if (layout == Layout::SendOnly && r != chunks.recv) {
        violations.push_back("chunk " + std::to_string(k) + ": unstaged recvbuf changed");
      }
      if (layout == Layout::RecvOnly && s != chunks.send) {
        violations.push_back("chunk " + std::to_string(k) + ": unstaged sendbuf changed");
      }
      const auto* in = static_cast<const int32_t*>(s);
      auto* out = static_cast<int32_t*>(r);
      for (size_t i = 0; i < n; ++i) {
        if (layout != Layout::RecvOnly && in[i] != input_value(first + i)) {
          violations.push_back("chunk " + std::to_string(k) + ": staged send element " +
                               std::to_string(i) + " is " + std::to_string(in[i]) + ", want " +
                               std::to_string(input_value(first + i)));
          break;
        }
      }
      if (layout == Layout::SendOnly) {
        for (size_t i = 0; i < n; ++i) sent.push_back(in[i]);
      } else {
        for (size_t i = 0; i < n; ++i) {
          out[i] = layout == Layout::RecvOnly ? recv_value(first + i) : mapped(in[i]);
        }
      }
      return copies->failing(Step::Run, k) ? PLX_ERROR_REMOTE : PLX_SUCCESS;
    });
  }

  bool in_ring(const void* p, size_t n) const {
    const auto* b = static_cast<const unsigned char*>(p);
    return b >= ring.data() && b + n * sizeof(int32_t) <= ring.data() + ring.size();
  }
  // The buffer the call writes: recv, or send in place.
  const std::vector<int32_t>& result() const {
    return layout == Layout::InPlace ? send : recv;
  }

  Layout layout;
  std::vector<int32_t> send;
  std::vector<int32_t> recv;
  std::vector<unsigned char> ring;
  StagedChunks chunks;
  std::unique_ptr<HostCopies> copies;
  std::vector<size_t> runs;  // elements of each host run, in call order
  std::vector<int32_t> sent;
  std::vector<std::string> violations;
  size_t seen = 0;
};

std::string joined(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

// ---- chunks and the decision ---------------------------------------------------------------

TEST(StagedPipeline, ChunkBoundaries) {
  StagedChunks c;
  c.elem_bytes = 4;
  c.chunk_elems = kChunk;
  const struct {
    size_t count, chunks, last;
  } cases[] = {{0, 1, 0},           {1, 1, 1},           {kChunk - 1, 1, kChunk - 1},
               {kChunk, 1, kChunk}, {kChunk + 1, 2, 1},  {7 * kChunk + kChunk / 2, 8, kChunk / 2}};
  for (const auto& t : cases) {
    c.count = t.count;
    EXPECT_EQ(c.chunks(), t.chunks) << "count " << t.count;
    EXPECT_EQ(c.elems(c.chunks() - 1), t.last) << "count " << t.count;
    size_t total = 0;
    for (size_t k = 0; k < c.chunks(); ++k) {
      EXPECT_EQ(c.first(k), total) << "count " << t.count << " chunk " << k;
      total += c.elems(k);
    }
    EXPECT_EQ(total, t.count);
  }
}

TEST(StagedPipeline, ChunkElemsFollowChunkBytesWithinTheClamp) {
  EXPECT_EQ(staging_chunk_elems(4, size_t{1} << 20), (size_t{1} << 20) / 4);
  EXPECT_EQ(staging_chunk_elems(8, 65536), 8192u);
  EXPECT_EQ(staging_chunk_elems(4, 1), kMinStagingChunkBytes / 4);            // raised
  EXPECT_EQ(staging_chunk_elems(2, size_t{1} << 30), kMaxStagingChunkBytes / 2);  // capped
  EXPECT_EQ(staging_chunk_elems(3, 65536), 65536u / 3);                       // whole elements
  EXPECT_EQ(staging_chunk_elems(0, 65536), 1u);
}

TEST(StagedPipeline, RingIsThreeSlotsOfOneOrTwoAreas) {
  StagedChunks c;
  c.elem_bytes = 4;
  c.chunk_elems = 1000;  // 4000 bytes, one area of 4096
  c.count = 100 * c.chunk_elems;
  int32_t send = 0, recv = 0;
  c.send = &send;
  c.recv = &recv;
  c.stage_send = c.stage_recv = true;
  EXPECT_EQ(c.area_bytes(), 4096u);
  EXPECT_EQ(c.ring_bytes(), kStagingDepth * 2 * 4096u);  // whatever the count
  c.recv = &send;
  EXPECT_TRUE(c.in_place());
  EXPECT_EQ(c.ring_bytes(), kStagingDepth * 4096u);
  c.stage_recv = false;
  EXPECT_FALSE(c.in_place());
  EXPECT_EQ(c.ring_bytes(), kStagingDepth * 4096u);
}

TEST(StagedPipeline, PipelinedOnlyForRangeCallsAboveTwoChunks) {
  DeviceArgs args;
  args.datatype = PLX_INT32;
  const size_t chunk_bytes = 65536;
  const size_t chunk = staging_chunk_elems(4, chunk_bytes);
  const size_t big = 2 * chunk + 1;
  std::vector<int32_t> a(big), b(big);  // disjoint buffers of the call's size
  args.send = a.data();
  args.recv = b.data();
  args.send_count = args.recv_count = big;
  EXPECT_FALSE(pipelined(args, big, chunk_bytes)) << "no range run: whole buffer";
  args.range_run = [](const void*, void*, size_t) { return PLX_SUCCESS; };
  EXPECT_TRUE(pipelined(args, big, chunk_bytes));
  args.send_count = args.recv_count = 2 * chunk;
  EXPECT_FALSE(pipelined(args, 2 * chunk, chunk_bytes)) << "two chunks: whole buffer";
  args.send_count = args.recv_count = big;
  args.recv = reinterpret_cast<unsigned char*>(a.data()) + 4;  // overlapping, not equal
  EXPECT_FALSE(pipelined(args, big, chunk_bytes));
  args.recv = a.data();  // in place
  EXPECT_TRUE(pipelined(args, big, chunk_bytes));
  args.recv_count = 0;  // reduce off the root
  EXPECT_TRUE(pipelined(args, big, chunk_bytes));
  args.recv_read = true;  // holes to keep: never
  EXPECT_FALSE(pipelined(args, big, chunk_bytes));
}

// ---- results -------------------------------------------------------------------------------

class StagedPipelineCounts : public testing::TestWithParam<Layout> {};

TEST_P(StagedPipelineCounts, EveryCountEveryChunkOnceInOrder) {
  const Layout layout = GetParam();
  for (size_t count : {size_t{0}, size_t{1}, kChunk - 1, kChunk, kChunk + 1, 2 * kChunk,
                       3 * kChunk + 1, 7 * kChunk + kChunk / 2}) {
    SCOPED_TRACE(std::string(layout_name(layout)) + ", count " + std::to_string(count));
    Call call(count, layout);
    ASSERT_EQ(call.run(), PLX_SUCCESS);
    EXPECT_EQ(call.violations, std::vector<std::string>{}) << joined(call.violations);
    EXPECT_EQ(call.copies->violations(), std::vector<std::string>{})
        << joined(call.copies->violations());
    EXPECT_EQ(call.copies->cancels(), 0);
    EXPECT_EQ(call.copies->pending(), 0u);
    // Every chunk ran once, in order, with its size.
    ASSERT_EQ(call.runs.size(), call.chunks.chunks());
    for (size_t k = 0; k < call.runs.size(); ++k) EXPECT_EQ(call.runs[k], call.chunks.elems(k));
    EXPECT_EQ(call.seen, count);
    // Every copy out was waited for before the call returned.
    EXPECT_EQ(call.copies->waited_out().size(), call.chunks.chunks());
    // Results against the closed form; the untouched side keeps its contents.
    for (size_t i = 0; i < count; ++i) {
      const int32_t want = layout == Layout::RecvOnly ? recv_value(i)
                           : layout == Layout::SendOnly ? -7
                                                        : mapped(input_value(i));
      if (call.result()[i] != want) {
        ADD_FAILURE() << "index " << i << ": got " << call.result()[i] << ", want " << want;
        break;
      }
    }
    if (layout == Layout::SendOnly) {
      ASSERT_EQ(call.sent.size(), count);
      for (size_t i = 0; i < count; ++i) {
        if (call.sent[i] != input_value(i)) {
          ADD_FAILURE() << "sent index " << i << ": got " << call.sent[i];
          break;
        }
      }
    }
    if (layout == Layout::OutOfPlace) {
      for (size_t i = 0; i < count; ++i) {
        if (call.send[i] != input_value(i)) {
          ADD_FAILURE() << "sendbuf changed at " << i;
          break;
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, StagedPipelineCounts,
                         testing::Values(Layout::OutOfPlace, Layout::InPlace, Layout::SendOnly,
                                         Layout::RecvOnly),
                         [](const testing::TestParamInfo<Layout>& info) {
                           switch (info.param) {
                             case Layout::OutOfPlace: return std::string("OutOfPlace");
                             case Layout::InPlace: return std::string("InPlace");
                             case Layout::SendOnly: return std::string("SendOnly");
                             case Layout::RecvOnly: return std::string("RecvOnly");
                           }
                           return std::string("Unknown");
                         });

// The three stages overlap: chunk k+1's copy in starts before chunk k runs, and chunk k's copy
// out is not waited for until chunk k+3 needs its slot.
TEST(StagedPipeline, StagesOverlap) {
  Call call(6 * kChunk, Layout::OutOfPlace);
  ASSERT_EQ(call.run(), PLX_SUCCESS);
  const std::vector<std::string> want = {
      "start_in 0", "start_in 1", "wait_in 0",  "start_out 0", "start_in 2", "wait_in 1",
      "start_out 1", "wait_out 0", "start_in 3", "wait_in 2",  "start_out 2", "wait_out 1",
      "start_in 4", "wait_in 3",  "start_out 3", "wait_out 2", "start_in 5", "wait_in 4",
      "start_out 4", "wait_in 5", "start_out 5", "wait_out 3", "wait_out 4", "wait_out 5"};
  EXPECT_EQ(call.copies->events(), want) << joined(call.copies->events());
}

// ---- errors --------------------------------------------------------------------------------

TEST(StagedPipeline, AnErrorStopsThePipelineAndLeavesNothingQueued) {
  const size_t count = 7 * kChunk + kChunk / 2;  // 8 chunks
  const struct {
    Step step;
    size_t k;
    plx_result_t code;
    size_t runs;  // host runs made before the pipeline stopped
  } cases[] = {
      {Step::StartIn, 0, PLX_ERROR_SYSTEM, 0}, {Step::StartIn, 5, PLX_ERROR_SYSTEM, 4},
      {Step::WaitIn, 0, PLX_ERROR_SYSTEM, 0},  {Step::WaitIn, 7, PLX_ERROR_SYSTEM, 7},
      {Step::StartOut, 3, PLX_ERROR_SYSTEM, 4}, {Step::WaitOut, 2, PLX_ERROR_SYSTEM, 4},
      {Step::WaitOut, 7, PLX_ERROR_SYSTEM, 8}, {Step::Run, 0, PLX_ERROR_REMOTE, 1},
      {Step::Run, 6, PLX_ERROR_REMOTE, 7},
  };
  for (const auto& t : cases) {
    for (Layout layout : {Layout::OutOfPlace, Layout::InPlace}) {
      SCOPED_TRACE(std::string(layout_name(layout)) + ", failing step " +
                   std::to_string(static_cast<int>(t.step)) + " at chunk " +
                   std::to_string(t.k));
      Call call(count, layout, t.step, t.k);
      EXPECT_EQ(call.run(), t.code);
      EXPECT_EQ(call.runs.size(), t.runs);
      EXPECT_EQ(call.copies->cancels(), 1);
      EXPECT_EQ(call.copies->pending(), 0u) << "copies still queued after the error";
      EXPECT_EQ(call.violations, std::vector<std::string>{}) << joined(call.violations);
      EXPECT_EQ(call.copies->violations(), std::vector<std::string>{})
          << joined(call.copies->violations());
      // Nothing was started after the failing step (a failing run comes right after its
      // chunk's wait_in).
      const auto& events = call.copies->events();
      ASSERT_FALSE(events.empty());
      const char* name = t.step == Step::StartIn    ? "start_in "
                         : t.step == Step::StartOut ? "start_out "
                         : t.step == Step::WaitOut  ? "wait_out "
                                                    : "wait_in ";
      EXPECT_EQ(events.back(), name + std::to_string(t.k));
    }
  }
}

}  // namespace
}  // namespace plexus::comm::device
