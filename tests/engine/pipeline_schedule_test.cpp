// pipeline_schedule_test.cpp - the P plugin's schedules (simple, 1f1b, interleaved) on real ranks.
//
// Every rank opens the world communicator, splits its pipeline group from it, loads
// libplexus_plugin_P.so through the engine's loader and calls run_pipeline with the fake engine
// of pipeline_fake_stages.h (closed-form integer arithmetic per chunk, calls recorded), whose
// results every schedule must reproduce exactly. Each rank checks:
//   - the values (accumulators of its chunks; losses on the last stage; input gradients on the
//     first), for P = 1, 2, 3, 4 and M = 1..8 (interleaved: M a multiple of P);
//   - each microbatch's forward on each chunk runs once, before its backward, and each chunk's
//     backwards run in microbatch order (so every schedule sums gradients in the same order);
//   - the exact order: GPipe all forwards then all backwards; 1F1B min(P-p-1, M) warm-up
//     forwards, then alternating, at most P-p microbatches in flight; interleaved the order of
//     Megatron-LM's interleaved schedule (checked against the paper's worked P=2, v=2 example);
//   - a failing stage op is reported with its message, and the other stages fail (not hang);
//   - options that do not fit the schedule are refused with their values named.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/plugin/plugin_loader.h"
#include "plexus/plexus.h"
#include "plexus/plugin.h"
#include "tests/comm/transport_cases.h"
#include "tests/engine/pipeline_fake_stages.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {
namespace {

using engine::LoadedPlugin;
using engine::load_plugin;

// ---- checks ----------------------------------------------------------------------------------

// "" when every (chunk, microbatch) ran forward once and then backward once.
std::string check_each_once(const std::vector<Call>& calls, int chunks, int microbatches) {
  std::map<std::pair<int, int>, int> state;
  for (const Call& c : calls) {
    int& s = state[{c.chunk, c.microbatch}];
    if (c.forward ? s != 0 : s != 1) {
      return to_string(c) + " out of turn in: " + to_string(calls);
    }
    s = c.forward ? 1 : 2;
  }
  for (int c = 0; c < chunks; ++c) {
    for (int m = 0; m < microbatches; ++m) {
      if (state[{c, m}] != 2) {
        return "chunk " + std::to_string(c) + " microbatch " + std::to_string(m) +
               " did not run forward and backward: " + to_string(calls);
      }
    }
  }
  return "";
}

std::string check_values(const FakeStages& fake, const Reference& ref, int stages, int stage,
                         int chunks, int microbatches) {
  if (!fake.problem().empty()) return fake.problem();
  for (int c = 0; c < chunks; ++c) {
    const int k = c * stages + stage;
    if (fake.accum()[c] != ref.accum[k]) {
      return "accumulator of global chunk " + std::to_string(k) + " is " +
             std::to_string(fake.accum()[c]) + ", expected " + std::to_string(ref.accum[k]);
    }
  }
  if (stage == stages - 1) {
    for (int m = 0; m < microbatches; ++m) {
      auto it = fake.losses().find(m);
      if (it == fake.losses().end() || it->second != ref.losses[m]) {
        return "loss of microbatch " + std::to_string(m) + " differs from the serial reference";
      }
    }
  }
  if (stage == 0) {
    for (int m = 0; m < microbatches; ++m) {
      auto it = fake.input_grads().find(m);
      if (it == fake.input_grads().end() || it->second != ref.input_grads[m]) {
        return "input gradient of microbatch " + std::to_string(m) +
               " differs from the serial reference";
      }
    }
  }
  return "";
}

std::string check_order(const std::vector<Call>& calls, int schedule, int stages, int stage,
                        int chunks, int microbatches) {
  std::vector<Call> want;
  if (schedule == PLX_PIPELINE_SIMPLE) want = gpipe_order(microbatches);
  if (schedule == PLX_PIPELINE_1F1B) want = one_f_one_b_order(stages, stage, microbatches);
  if (schedule == PLX_PIPELINE_INTERLEAVED) {
    want = interleaved_order(stages, stage, chunks, microbatches);
  }
  if (calls != want) return "order " + to_string(calls) + ", expected " + to_string(want);
  // Every schedule sums each chunk's gradient over the microbatches in order 0..M-1 (the same
  // bits whatever the schedule).
  std::vector<int> next_backward(chunks, 0);
  for (const Call& c : calls) {
    if (!c.forward && c.microbatch != next_backward[c.chunk]++) {
      return "backwards of chunk " + std::to_string(c.chunk) + " out of microbatch order: " +
             to_string(calls);
    }
  }
  if (schedule == PLX_PIPELINE_1F1B) {
    int in_flight = 0, most = 0;
    for (const Call& c : calls) most = std::max(most, in_flight += c.forward ? 1 : -1);
    if (most > stages - stage) {
      return std::to_string(most) + " microbatches in flight, more than P-p = " +
             std::to_string(stages - stage);
    }
  }
  return "";
}

// ---- rank plumbing ---------------------------------------------------------------------------

// One rank's world and pipeline group. On a failed check the world is aborted, so that the
// other ranks fail at once instead of waiting out PLEXUS_TIMEOUT_MS.
class PipelineRank {
 public:
  PipelineRank(int rank, int stages) : rank_(rank), stages_(stages) {}
  ~PipelineRank() {
    if (world_) plx_comm_abort(world_);
  }

  std::string open() {
    if (plx_comm_init_from_env(&world_) != PLX_SUCCESS) {
      return std::string("plx_comm_init_from_env: ") + plx_get_last_error(nullptr);
    }
    stage_ = rank_ % stages_;
    if (plx_comm_split(world_, rank_ / stages_, stage_, &pipeline_) != PLX_SUCCESS) {
      return std::string("plx_comm_split: ") + plx_get_last_error(nullptr);
    }
    try {
      plugin_ = load_plugin("P");
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  // create() with the given schedule options; "" or the failure.
  std::string create(int schedule, int chunks, void** state, plx_result_t* code = nullptr,
                     int microbatches = 0) {
    plx_plugin_context_t context = PLX_PLUGIN_CONTEXT_INIT;
    context.world = world_;
    context.group = pipeline_;
    context.pipeline_group = pipeline_;
    context.degree = stages_;
    context.coordinate = stage_;
    context.pipeline_schedule = schedule;
    context.virtual_stages = chunks;
    // run_pipeline takes each step's M from its ops; create checks the context's.
    context.num_microbatches = microbatches > 0 ? microbatches : stages_;
    char err[512] = {};
    const plx_result_t r = plugin_.api().create(&context, state, err, sizeof(err));
    if (code) *code = r;
    return r == PLX_SUCCESS ? "" : std::string("create: ") + err;
  }

  // Closes cleanly; "" or the failure.
  std::string close() {
    std::string why;
    if (plx_comm_destroy(pipeline_) != PLX_SUCCESS) why = "destroying the pipeline group";
    pipeline_ = nullptr;
    if (plx_comm_destroy(world_) != PLX_SUCCESS) why = "destroying the world";
    world_ = nullptr;
    return why;
  }

  void abort_world() {
    if (world_) plx_comm_abort(world_);
    world_ = nullptr;
  }

  const plx_plugin_t& api() const { return plugin_.api(); }
  int stage() const { return stage_; }

 private:
  int rank_, stages_, stage_ = 0;
  plx_comm_t world_ = nullptr, pipeline_ = nullptr;
  LoadedPlugin plugin_;
};

struct ScheduleCase {
  int schedule;
  int chunks;
  std::vector<int> microbatches;
};

// Runs every case on one rank; "" or the first failure.
std::string run_cases(PipelineRank& rank, int stages, const std::vector<ScheduleCase>& cases,
                      size_t count) {
  if (auto why = rank.open(); !why.empty()) return why;
  for (const ScheduleCase& c : cases) {
    void* state = nullptr;
    if (auto why = rank.create(c.schedule, c.chunks, &state); !why.empty()) return why;
    for (int m : c.microbatches) {
      const std::string what = "schedule " + std::to_string(c.schedule) + ", P=" +
                               std::to_string(stages) + ", v=" + std::to_string(c.chunks) +
                               ", M=" + std::to_string(m) + ": ";
      FakeStages fake(stages, rank.stage(), c.chunks, m, count);
      const plx_stage_ops_t ops = fake.ops(m);
      char err[1024] = {};
      if (rank.api().run_pipeline(state, &ops, err, sizeof(err)) != PLX_SUCCESS) {
        return what + "run_pipeline: " + err;
      }
      const Reference ref = serial_reference(stages * c.chunks, m, count);
      std::string why = check_each_once(fake.calls(), c.chunks, m);
      if (why.empty()) why = check_values(fake, ref, stages, rank.stage(), c.chunks, m);
      if (why.empty()) {
        why = check_order(fake.calls(), c.schedule, stages, rank.stage(), c.chunks, m);
      }
      if (!why.empty()) return what + why;
    }
    rank.api().destroy(state);
  }
  return rank.close();
}

std::vector<int> one_to_eight() { return {1, 2, 3, 4, 5, 6, 7, 8}; }

std::vector<int> multiples_up_to_eight(int stages) {
  std::vector<int> out;
  for (int m = stages; m <= 8; m += stages) out.push_back(m);
  return out;
}

// Every schedule for M = 1..8 (interleaved: the multiples of P) on `world` ranks in pipelines of
// `stages`; with `more_chunks`, interleaved also with v = 1 and v = 3.
void run_matrix(int world, int stages, size_t count, bool more_chunks) {
  std::vector<ScheduleCase> cases = {
      {PLX_PIPELINE_SIMPLE, 1, one_to_eight()},
      {PLX_PIPELINE_1F1B, 1, one_to_eight()},
      {PLX_PIPELINE_INTERLEAVED, 2, multiples_up_to_eight(stages)},
  };
  if (more_chunks) {
    cases.push_back({PLX_PIPELINE_INTERLEAVED, 1, multiples_up_to_eight(stages)});
    cases.push_back({PLX_PIPELINE_INTERLEAVED, 3, multiples_up_to_eight(stages)});
  }
  const auto outcomes = run_ranks(
      world,
      [&](int r) {
        PipelineRank rank(r, stages);
        const std::string why = run_cases(rank, stages, cases, count);
        if (!why.empty()) rank.abort_world();
        return why.empty() ? 0 : rank_failure(r, why);
      },
      240.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// ---- tests -----------------------------------------------------------------------------------

// P1 (a placement may write the axis with degree 1): interleaved chunks pass to the same rank.
TEST(PipelineSchedule, OneStage) { run_matrix(1, 1, 7, true); }

// Two pipelines of two stages each (world 4, D2P2): the groups must not cross-talk.
TEST(PipelineSchedule, TwoStagesInTwoPipelines) { run_matrix(4, 2, 7, true); }

TEST(PipelineSchedule, ThreeStages) { run_matrix(3, 3, 7, false); }

TEST(PipelineSchedule, FourStages) { run_matrix(4, 4, 5, false); }

// Activations of 1 MiB (past the eager size of the transports, and sliced into chunks).
TEST(PipelineSchedule, LargeActivations) {
  const std::vector<ScheduleCase> cases = {{PLX_PIPELINE_SIMPLE, 1, {3}},
                                           {PLX_PIPELINE_1F1B, 1, {3}},
                                           {PLX_PIPELINE_INTERLEAVED, 2, {4}}};
  const auto outcomes = run_ranks(
      2,
      [&](int r) {
        PipelineRank rank(r, 2);
        const std::string why = run_cases(rank, 2, cases, (1u << 18) + 3);
        if (!why.empty()) rank.abort_world();
        return why.empty() ? 0 : rank_failure(r, why);
      },
      240.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// The paper's example (P = 2, v = 2, M = 4), written out, against the order the fake saw.
TEST(PipelineSchedule, InterleavedOrderMatchesMegatron) {
  auto F = [](int c, int m) { return Call{true, c, m}; };
  auto B = [](int c, int m) { return Call{false, c, m}; };
  const std::vector<Call> stage0 = {F(0, 0), F(0, 1), F(1, 0), F(1, 1), F(0, 2), B(1, 0),
                                    F(0, 3), B(1, 1), F(1, 2), B(0, 0), F(1, 3), B(0, 1),
                                    B(1, 2), B(1, 3), B(0, 2), B(0, 3)};
  const std::vector<Call> stage1 = {F(0, 0), F(0, 1), F(1, 0), B(1, 0), F(1, 1), B(1, 1),
                                    F(0, 2), B(0, 0), F(0, 3), B(0, 1), F(1, 2), B(1, 2),
                                    F(1, 3), B(1, 3), B(0, 2), B(0, 3)};
  EXPECT_EQ(to_string(interleaved_order(2, 0, 2, 4)), to_string(stage0));
  EXPECT_EQ(to_string(interleaved_order(2, 1, 2, 4)), to_string(stage1));
  const auto outcomes = run_ranks(
      2,
      [&](int r) {
        PipelineRank rank(r, 2);
        std::string why = rank.open();
        void* state = nullptr;
        if (why.empty()) why = rank.create(PLX_PIPELINE_INTERLEAVED, 2, &state);
        FakeStages fake(2, r, 2, 4, 3);
        const plx_stage_ops_t ops = fake.ops(4);
        char err[512] = {};
        if (why.empty() && rank.api().run_pipeline(state, &ops, err, sizeof(err)) != PLX_SUCCESS) {
          why = err;
        }
        if (why.empty() && fake.calls() != (r == 0 ? stage0 : stage1)) {
          why = "order " + to_string(fake.calls());
        }
        if (why.empty()) {
          rank.api().destroy(state);
          why = rank.close();
        }
        if (!why.empty()) rank.abort_world();
        return why.empty() ? 0 : rank_failure(r, why);
      },
      120.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Every 10 steps world rank 0 prints, at PLEXUS_DEBUG=INFO, the bubble summed over the stages
// beside the theoretical (P-1)/(v*M); other ranks print nothing.
TEST(PipelineSchedule, BubbleIsReportedEveryTenStepsAtInfo) {
  EnvList env = transport_env("tcp");
  env.push_back({"PLEXUS_DEBUG", "INFO"});
  const auto outcomes = run_ranks(
      2,
      [&](int r) {
        // This rank's stderr goes to a file, read back at the end.
        char path[] = "/tmp/plexus-bubble-log-XXXXXX";
        const int fd = mkstemp(path);
        std::fflush(stderr);
        const int saved = dup(2);
        dup2(fd, 2);
        PipelineRank rank(r, 2);
        std::string why = rank.open();
        void* state = nullptr;
        if (why.empty()) why = rank.create(PLX_PIPELINE_1F1B, 1, &state);
        for (int step = 0; step < 10 && why.empty(); ++step) {
          FakeStages fake(2, r, 1, 2, 3);
          const plx_stage_ops_t ops = fake.ops(2);
          char err[512] = {};
          if (rank.api().run_pipeline(state, &ops, err, sizeof(err)) != PLX_SUCCESS) why = err;
        }
        if (why.empty()) {
          rank.api().destroy(state);
          why = rank.close();
        }
        std::fflush(stderr);
        dup2(saved, 2);
        close(saved);
        std::string log;
        char buf[4096];
        for (ssize_t n; (n = pread(fd, buf, sizeof(buf), static_cast<off_t>(log.size()))) > 0;) {
          log.append(buf, static_cast<size_t>(n));
        }
        close(fd);
        unlink(path);
        const std::string want = "plexus rank 0: INFO pipeline bubble: measured ";
        const std::string theory = ", theoretical 0.500 (1f1b, P=2, v=1, M=2, steps 1-10; ";
        const size_t at = log.find(want);
        if (why.empty() && r == 0 &&
            (at == std::string::npos || log.find(theory, at) == std::string::npos)) {
          why = "no bubble line in rank 0's log:\n" + log;
        }
        if (why.empty() && r == 1 && log.find("pipeline bubble") != std::string::npos) {
          why = "rank 1 printed a bubble line:\n" + log;
        }
        if (!why.empty()) rank.abort_world();
        return why.empty() ? 0 : rank_failure(r, why);
      },
      120.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Stage 1 of 3 fails in the forward of microbatch 2: it reports the op's message; the engine's
// part (here the test's) is to abort the world, and then the other stages fail too instead of
// waiting for it.
TEST(PipelineSchedule, StageOpErrorIsReportedAndNobodyHangs) {
  EnvList patient_env = transport_env("tcp");
  patient_env.push_back({"PLEXUS_TIMEOUT_MS", "60000"});  // set later, so it wins
  const auto outcomes = run_ranks(
      3,
      [&](int r) {
        PipelineRank rank(r, 3);
        std::string why = rank.open();
        void* state = nullptr;
        if (why.empty()) why = rank.create(PLX_PIPELINE_1F1B, 1, &state);
        if (!why.empty()) return rank_failure(r, why);
        FakeStages fake(3, r, 1, 4, 5);
        if (r == 1) fake.fail_at({true, 0, 2}, "fake forward failed on purpose");
        const plx_stage_ops_t ops = fake.ops(4);
        char err[1024] = {};
        const plx_result_t got = rank.api().run_pipeline(state, &ops, err, sizeof(err));
        rank.abort_world();
        const std::string text = err;
        if (r == 1) {
          const std::string want =
              "P: rank 1 (stage 1): forward of chunk 0 (global chunk 1) microbatch 2: fake "
              "forward failed on purpose";
          if (got != PLX_ERROR_SYSTEM || text != want) {
            return rank_failure(r, "got " + std::string(plx_get_error_string(got)) + " \"" +
                                       text + "\", expected PLX_ERROR_SYSTEM \"" + want + "\"");
          }
        } else if (got != PLX_ERROR_REMOTE && got != PLX_ERROR_ABORTED) {
          return rank_failure(r, "got " + std::string(plx_get_error_string(got)) + " \"" + text +
                                     "\", expected PLX_ERROR_REMOTE");
        }
        // A failed pipeline is not usable again.
        char again[512] = {};
        if (rank.api().run_pipeline(state, &ops, again, sizeof(again)) !=
                PLX_ERROR_INVALID_USAGE ||
            std::string(again).find("unusable after an earlier failure") == std::string::npos) {
          return rank_failure(r, std::string("second run_pipeline: ") + again);
        }
        rank.api().destroy(state);
        return 0;
      },
      // Under PLEXUS_TIMEOUT_MS: a stage left waiting for the failed one until it times out
      // is killed, and fails the test.
      50.0, patient_env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

// Options that do not fit the schedule are refused, naming the values, on every rank alike, and
// leave the plugin usable.
TEST(PipelineSchedule, OptionsThatDoNotFitAreRefused) {
  const auto outcomes = run_ranks(
      2,
      [&](int r) {
        PipelineRank rank(r, 2);
        std::string why = rank.open();
        void* state = nullptr;
        plx_result_t code = PLX_SUCCESS;
        if (why.empty()) {
          const std::string got = rank.create(PLX_PIPELINE_1F1B, 2, &state, &code);
          const std::string want = "create: P: rank " + std::to_string(r) +
                                   ": virtual_stages 2 needs the interleaved schedule, not 1f1b";
          if (code != PLX_ERROR_INVALID_ARGUMENT || got != want) why = "1f1b v=2: " + got;
        }
        if (why.empty()) {
          const std::string got = rank.create(7, 1, &state, &code);
          if (code != PLX_ERROR_INVALID_ARGUMENT ||
              got.find("pipeline_schedule 7 not in 0..2") == std::string::npos) {
            why = "schedule 7: " + got;
          }
        }
        if (why.empty()) {
          const std::string got = rank.create(PLX_PIPELINE_INTERLEAVED, 2, &state, &code, 3);
          const std::string want = "create: P: rank " + std::to_string(r) +
                                   ": the interleaved schedule needs num_microbatches 3 to be a "
                                   "multiple of the pipeline degree 2";
          if (code != PLX_ERROR_INVALID_ARGUMENT || got != want) why = "interleaved M=3: " + got;
        }
        if (why.empty()) why = rank.create(PLX_PIPELINE_INTERLEAVED, 2, &state);
        FakeStages fake(2, r, 2, 3, 3);
        char err[512] = {};
        if (why.empty()) {
          const plx_stage_ops_t ops = fake.ops(3);
          const plx_result_t got = rank.api().run_pipeline(state, &ops, err, sizeof(err));
          const std::string want = "P: rank " + std::to_string(r) + " (stage " +
                                   std::to_string(r) +
                                   "): run_pipeline: the interleaved schedule needs "
                                   "num_microbatches 3 to be a multiple of the pipeline degree 2";
          if (got != PLX_ERROR_INVALID_ARGUMENT || err != want) why = std::string("M=3: ") + err;
        }
        if (why.empty()) {
          plx_stage_ops_t ops = fake.ops(2);
          ops.num_chunks = 3;
          const plx_result_t got = rank.api().run_pipeline(state, &ops, err, sizeof(err));
          if (got != PLX_ERROR_INVALID_ARGUMENT ||
              std::string(err).find("num_chunks 3 differs from the context's virtual_stages 2") ==
                  std::string::npos) {
            why = std::string("num_chunks 3: ") + err;
          }
        }
        if (why.empty()) {
          // Still usable: a valid step runs.
          FakeStages ok(2, r, 2, 2, 3);
          const plx_stage_ops_t ops = ok.ops(2);
          if (rank.api().run_pipeline(state, &ops, err, sizeof(err)) != PLX_SUCCESS) why = err;
        }
        if (why.empty()) {
          rank.api().destroy(state);
          why = rank.close();
        }
        if (!why.empty()) rank.abort_world();
        return why.empty() ? 0 : rank_failure(r, why);
      },
      120.0, transport_env("tcp"));
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

}  // namespace
}  // namespace plexus::test
