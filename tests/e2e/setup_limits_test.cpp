// End-to-end: plexus-train's set-up cannot run away (issue 19). Real plexus-train processes,
// under the real plexus-run where ranks matter:
//  (a) oversized options (--n-layer 1000000 at width 1024, a batch past the layers' row count,
//      a dimension out of range) are refused at once on every rank with exit 2, naming the
//      options and the sizes; never a std::bad_alloc, never a partition that runs for minutes
//      (a bound of 60 s on each, the time printed);
//  (b) crafted single-file checkpoints given to --sample are refused with exit 2 naming the
//      file, the field and the value, never a raw JSON exception or a bad_alloc;
//  (c) a SIGTERM while a million-layer model is being built ends the job within a bound (20 s
//      asserted; the process exits at once, the time printed), every rank naming the stage.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "tests/e2e/synthetic_corpus.h"
#include "tests/support/crafted_checkpoint.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class SetupLimits : public ::testing::Test {
 protected:
  std::vector<std::string> command(int ranks, const std::vector<std::string>& extra) const {
    std::vector<std::string> args;
    if (ranks > 1) args = {PLEXUS_RUN_PATH, "-n", std::to_string(ranks), "--"};
    for (const std::string a :
         {PLEXUS_TRAIN_PATH, "--data", corpus_.data().c_str(), "--checkpoint", ""}) {
      args.push_back(a);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }

  // Runs and expects exit 2 with no bare allocation or JSON failure; prints the time taken.
  ProcessResult refused(const std::vector<std::string>& argv, const char* what) const {
    const auto start = std::chrono::steady_clock::now();
    ProcessResult r = run_process(argv, 60);
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("setup_limits_test: %s refused in %.2f s\n", what, s);
    EXPECT_FALSE(r.timed_out) << what << ": still running after 60 s\n" << r.out << r.err;
    EXPECT_EQ(r.exit_code, 2) << what << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, Not(HasSubstr("bad_alloc")));
    EXPECT_THAT(r.err, Not(HasSubstr("json.exception")));
    EXPECT_THAT(r.out, Not(HasSubstr("step     1/")));
    return r;
  }

  CorpusFolder corpus_{"plexus-setup-limits"};
};

TEST_F(SetupLimits, OversizedOptionsAreRefusedAtOnceNamingThem) {
  ProcessResult r = refused(command(2, {"--n-layer", "1000000", "--n-embd", "1024",
                                        "--n-head", "8"}),
                            "--n-layer 1000000 --n-embd 1024 on 2 ranks");
  for (const char* rank : {"0", "1"}) {
    EXPECT_THAT(r.err, HasSubstr(std::string("plexus-train: rank ") + rank +
                                 ": --n-layer 1000000 --n-embd 1024: the model's "));
  }
  // 1000000 x (12 x 1024^2 + 13 x 1024) + (256 + 64) x 1024 + 2048 parameters x 16 bytes.
  EXPECT_THAT(r.err, HasSubstr("the model's 12596.2 billion parameters take 183.30 TiB with "
                               "their gradients and AdamW's two moments (16 bytes each), 91.65 "
                               "TiB per rank even spread over all 2 ranks; this host's 2 ranks "
                               "need at least 183.30 TiB, more than its "));

  r = refused(command(1, {"--batch-size", "100000000"}), "--batch-size 100000000");
  EXPECT_THAT(r.err, HasSubstr("plexus-train: rank 0: --batch-size 100000000 --microbatches 1 "
                               "--seq-len 64: a microbatch of 100000000 rows x 64 tokens = "
                               "6400000000 tokens per rank, more than the layers' 2147483647"));

  r = refused(command(1, {"--batch-size", "4000000", "--seq-len", "512"}),
              "--batch-size 4000000 --seq-len 512");
  EXPECT_THAT(r.err, HasSubstr("plexus-train: rank 0: --batch-size 4000000 --microbatches 1 "
                               "--seq-len 512: a microbatch's activations through one block "
                               "(residual stream and attention scores) take "));

  r = refused(command(1, {"--n-layer", "2000000"}), "--n-layer 2000000");
  EXPECT_THAT(r.err, HasSubstr("plexus-train: rank 0: --n-layer 2000000 not in 1..1048576"));
}

TEST_F(SetupLimits, CraftedSingleFileCheckpointsAreRefusedNamingTheField) {
  const std::string file = corpus_.path("crafted.ckpt");
  const std::string sections = R"("sections": [{"name": "params", "count": 10}])";
  struct Crafted {
    std::string header;
    std::string message;
  };
  const Crafted cases[] = {
      {"{" + sections + "}", "header field model is null; valid: an object of the model's sizes"},
      {R"({"model": {"vocab_size": 256, "max_seq_len": 8, "n_layer": 1000000000, "n_head": 1,
          "n_embd": 1024}, )" + sections + "}",
       "header field model.n_layer is 1000000000; valid: an integer in 1..1048576"},
      {R"({"model": {"vocab_size": 256, "max_seq_len": 8, "n_layer": "4", "n_head": 1,
          "n_embd": 8}, )" + sections + "}",
       "header field model.n_layer is \"4\"; valid: an integer in 1..1048576"},
      {R"({"model": {"vocab_size": 256, "max_seq_len": 8, "n_layer": 4, "n_head": 3,
          "n_embd": 8}, )" + sections + "}",
       "header's model is invalid: GptConfig: n_embd 8 is not a multiple of n_head 3"},
      // The largest model in range: its parameter count is compared before any allocation.
      {R"({"model": {"vocab_size": 1048576, "max_seq_len": 1048576, "n_layer": 1048576,
          "n_head": 1, "n_embd": 1048576}, )" + sections + "}",
       "has 10 parameters in its params section; its header's model (n_layer 1048576, n_embd "
       "1048576, vocab_size 1048576, max_seq_len 1048576) has "},
      {R"({"model": 5, "sections": [{"name": "params", "count": "10"}]})",
       "header field sections[0].count is \"10\"; valid: an integer >= 0"},
  };
  for (const Crafted& c : cases) {
    SCOPED_TRACE(c.header);
    write_crafted_checkpoint(file, c.header, 10);
    const ProcessResult r = refused(
        {PLEXUS_TRAIN_PATH, "--sample", "--checkpoint", file, "--tokens", "4"}, "crafted header");
    EXPECT_THAT(r.err, HasSubstr("checkpoint '" + file + "'"));
    EXPECT_THAT(r.err, HasSubstr(c.message));
  }
}

// A real checkpoint's header with one field forged at a time (the params section kept): each
// is refused naming the field, as is a header of 100000 nested arrays (once a stack overflow in
// nlohmann's dump). The unforged header samples.
TEST_F(SetupLimits, ForgedFieldsOfARealCheckpointsHeaderAreRefusedNamingThem) {
  const std::string real = corpus_.path("real.ckpt");
  const ProcessResult trained = run_process(
      {PLEXUS_TRAIN_PATH, "--data", corpus_.data(), "--n-layer", "1", "--n-head", "1",
       "--n-embd", "8", "--seq-len", "8", "--batch-size", "2", "--steps", "1", "--val-every", "0",
       "--checkpoint", real},
      120);
  ASSERT_EQ(trained.exit_code, 0) << trained.out << trained.err;
  std::ifstream in(real, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_GT(bytes.size(), 24u);
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data() + 8, 8);
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(16, header_bytes));
  const size_t floats = (bytes.size() - 24 - header_bytes) / sizeof(float);
  const std::string file = corpus_.path("forged.ckpt");
  const std::vector<std::string> sample = {PLEXUS_TRAIN_PATH, "--sample", "--checkpoint", file,
                                           "--tokens", "2"};

  write_crafted_checkpoint(file, header.dump(), floats);
  const ProcessResult ok = run_process(sample, 60);
  ASSERT_EQ(ok.exit_code, 0) << "the unforged header: " << ok.out << ok.err;

  struct Forged {
    const char* pointer;  // JSON pointer of the forged field
    nlohmann::json value;
    std::string message;
  };
  const Forged cases[] = {
      {"/step", 1.5, "header field step is 1.5; valid: an integer in 0.."},
      {"/step", -3, "header field step is -3; valid: an integer in 0.."},
      {"/step", nlohmann::json::array({1}), "header field step is [1]"},
      {"/seed", -1, "header field seed is -1; valid: an integer in 0..2^64-1"},
      {"/global_batch", 0, "header field global_batch is 0; valid: an integer in 1..2147483647"},
      {"/format", "other", "header field format is \"other\"; valid: \"plexus-gpt\""},
      {"/placement", 4, "header field placement is 4; valid: a string"},
      {"/val_loss", "low", "header field val_loss is \"low\""},
      {"/tensors/1/offset", -8192, "header field tensors[1] is {\"name\":"},
      {"/tensors/1/offset", 9223372036854775808ULL, "header field tensors[1] is {\"name\":"},
      {"/tensors/0/shape", nlohmann::json::array({1ULL << 40, 1ULL << 40}),
       "header field tensors[0] is {\"name\":"},
      {"/tensors/1", header.at("tensors").at(0), "header field tensors[1] is {\"name\":"},
  };
  for (const Forged& c : cases) {
    SCOPED_TRACE(std::string(c.pointer) + " = " + c.value.dump());
    nlohmann::json forged = header;
    forged[nlohmann::json::json_pointer(c.pointer)] = c.value;
    write_crafted_checkpoint(file, forged.dump(), floats);
    const ProcessResult r = refused(sample, "forged header field");
    EXPECT_THAT(r.err, HasSubstr("checkpoint '" + file + "': " + c.message));
  }
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  write_crafted_checkpoint(file, deep, floats);
  const ProcessResult r = refused(sample, "100000 nested arrays");
  EXPECT_THAT(r.err, HasSubstr("checkpoint '" + file + "' is corrupt or incomplete: header nests "
                               "arrays or objects deeper than 64 levels"));
}

// The issue-19 case under a launcher: SIGTERM while a million blocks are being built.
TEST_F(SetupLimits, SigtermDuringAMillionLayerSetUpEndsTheJob) {
  Subprocess job(command(2, {"--n-layer", "1000000", "--n-embd", "1", "--n-head", "1",
                             "--seq-len", "8", "--batch-size", "2", "--steps", "1"}));
  ASSERT_TRUE(job.wait_for_stdout("plexus-train: building the model: 1000000 blocks", 1, 120))
      << job.output_so_far();
  const auto sent = std::chrono::steady_clock::now();
  ASSERT_EQ(kill(job.pid(), SIGTERM), 0);
  const ProcessResult r = job.wait(60);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::printf("setup_limits_test: the job ended %.2f s after SIGTERM\n", s);
  RecordProperty("seconds_after_sigterm", std::to_string(s));
  ASSERT_FALSE(r.timed_out) << r.out << r.err;
  EXPECT_LT(s, 20.0) << r.out << r.err;
  EXPECT_EQ(r.exit_code, 128 + SIGTERM) << r.out << r.err;
  EXPECT_THAT(r.err, HasSubstr("plexus-train: rank 0: stopped by SIGTERM during set-up ("));
  EXPECT_THAT(r.err, HasSubstr("): nothing was trained or saved"));
  EXPECT_THAT(r.out, Not(HasSubstr("step     1/1")));
}

}  // namespace
}  // namespace plexus::test
