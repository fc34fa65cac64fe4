// checkpoint_folder_test.cpp - the checkpoint folder's life across crashes and bad input
// (engine/checkpoint/sharded_checkpoint.h, checkpoint_io.h): a folder that cannot be created or
// written is refused before training; a step folder that cannot be looked into is an error
// naming it, never an "incomplete" one to start afresh over; what an interrupted save left
// (step-N.tmp with rank files of another world or other values, step-N without a manifest) is
// replaced by the next save of that step and never ends up in the completed checkpoint; a job
// only touches its own temporary folders (step-N.tmp-<job>), never another job's; complete
// checkpoints are listed newest first; and a manifest's training fields (the learning-rate
// schedule included) and model are range-checked.
//
// Permission cases run as user nobody in a child process when the test runs as root (root
// ignores permissions).
#include <gmock/gmock.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "engine/checkpoint/checkpoint_io.h"
#include "engine/checkpoint/shard_file.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "tests/support/temp_dir.h"

namespace plexus::engine {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

GptConfig tiny_config() {
  return {.vocab_size = 11, .max_seq_len = 4, .n_layer = 2, .n_head = 2, .n_embd = 8};
}

// One section `params` of the whole model, value = offset + bias, split over `ranks` files.
std::vector<float> values(float bias) {
  std::vector<float> v(full_num_params(tiny_config()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + bias;
  return v;
}

void write_ranks(const std::string& dir, int64_t step, int ranks, const std::vector<float>& v) {
  for (int r = 0; r < ranks; ++r) {
    const size_t begin = v.size() * r / ranks, end = v.size() * (r + 1) / ranks;
    write_rank_shard(dir, step, r, {{"params", begin, end - begin, v.data() + begin}});
  }
}

nlohmann::json training(int64_t step) {
  return {{"step", step}, {"seed", 7}, {"global_batch", 4}, {"val_loss", nullptr}};
}

std::vector<float> read_back(const std::string& path) {
  CheckpointReader reader(path);
  std::vector<float> v(full_num_params(tiny_config()));
  reader.read({{"params", 0, v.size(), v.data()}});
  return v;
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// fn's message, run as an unprivileged user: in a child process as nobody when this one is
// root (root passes every permission check), else here.
std::string as_unprivileged(const std::function<std::string()>& fn) {
  if (geteuid() != 0) return fn();
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string out;
    if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
        setresuid(65534, 65534, 65534) != 0) {
      out = "could not become nobody";
    } else {
      out = fn();
    }
    const ssize_t ignored = write(fds[1], out.data(), out.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof(buffer))) > 0;) out.append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return out;
}

// e.what() of the CheckpointError fn throws, or "no error".
std::string checkpoint_error(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "no error";
}

class CheckpointFolder : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(tmp_.path().empty());
    fs::permissions(tmp_.path(), fs::perms::owner_all | fs::perms::group_read |
                                     fs::perms::group_exec | fs::perms::others_read |
                                     fs::perms::others_exec);
  }
  test::TempDir tmp_{"plexus-ckpt-folder"};
  std::string dir_ = tmp_.path() + "/ckpt";
};

TEST_F(CheckpointFolder, MissingFolderIsCreatedAndBadOnesAreNamed) {
  check_checkpoint_folder(dir_ + "/deeper");
  EXPECT_TRUE(fs::is_directory(dir_ + "/deeper"));
  EXPECT_TRUE(fs::is_empty(dir_ + "/deeper")) << "the write check left its file";

  std::ofstream(tmp_.path() + "/plain") << "a file";
  EXPECT_EQ(checkpoint_error([&] { check_checkpoint_folder(tmp_.path() + "/plain/ckpt"); }),
            "checkpoint folder '" + tmp_.path() + "/plain/ckpt': cannot create it: Not a "
            "directory");
  EXPECT_EQ(checkpoint_error([&] { check_checkpoint_folder(tmp_.path() + "/plain"); }),
            "checkpoint folder '" + tmp_.path() + "/plain' exists and is not a directory");

  fs::create_directories(dir_ + "/readonly");
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir_ + "/readonly", fs::perms::owner_read | fs::perms::owner_exec |
                                          fs::perms::others_read | fs::perms::others_exec);
  const std::string readonly = dir_ + "/readonly";
  EXPECT_EQ(as_unprivileged([&] {
              return checkpoint_error([&] { check_checkpoint_folder(readonly); });
            }),
            "checkpoint folder '" + readonly + "' is not writable: Permission denied");
  EXPECT_EQ(as_unprivileged([&] {
              return checkpoint_error([&] { check_checkpoint_folder(readonly + "/sub"); });
            }),
            "checkpoint folder '" + readonly + "/sub': cannot create it: Permission denied");
}

TEST_F(CheckpointFolder, UnreadableStepFolderIsAnErrorNamingIt) {
  write_ranks(dir_, 4, 1, values(0));
  finalize_checkpoint(dir_, 4, 1, tiny_config(), "D", training(4));
  write_ranks(dir_, 8, 1, values(1));
  finalize_checkpoint(dir_, 8, 1, tiny_config(), "D", training(8));
  fs::permissions(dir_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir_ + "/step-00000004", fs::perms::owner_all | fs::perms::others_read |
                                               fs::perms::others_exec);
  fs::permissions(dir_ + "/step-00000008", fs::perms::none);
  const std::string message = as_unprivileged([&] {
    return checkpoint_error([&] { newest_complete_checkpoint(dir_); });
  });
  EXPECT_EQ(message, "checkpoint '" + dir_ + "/step-00000008': look for manifest.json: "
                     "Permission denied (fix its permissions or move it away)");
  // Readable again: the newest is found as before.
  fs::permissions(dir_ + "/step-00000008", fs::perms::owner_all);
  EXPECT_EQ(newest_complete_checkpoint(dir_), dir_ + "/step-00000008");
}

TEST_F(CheckpointFolder, InterruptedSaveOfTheSameStepIsReplaced) {
  // An earlier run of 3 ranks crashed after its rank files, before its manifest: step-6.tmp
  // holds rank-0..2.bin of other values. A folder step-7 lost its manifest.
  write_ranks(dir_, 6, 3, values(100));
  write_ranks(dir_, 7, 1, values(200));
  fs::rename(dir_ + "/step-00000007.tmp", dir_ + "/step-00000007");
  EXPECT_EQ(newest_complete_checkpoint(dir_), std::nullopt);

  // Without a fresh start, the stale rank-2.bin would be renamed into the checkpoint: refused.
  write_ranks(dir_, 6, 2, values(0));
  EXPECT_THAT(checkpoint_error([&] {
                finalize_checkpoint(dir_, 6, 2, tiny_config(), "D2", training(6));
              }),
              HasSubstr("holds 'rank-2.bin', which is no rank file of a world of 2"));
  EXPECT_FALSE(fs::exists(dir_ + "/step-00000006"));

  // The save as the trainer does it: rank 0 prepares, every rank writes, rank 0 finalizes.
  for (int64_t step : {6, 7}) {
    prepare_checkpoint_step(dir_, step);
    EXPECT_TRUE(fs::is_empty(checkpoint_path(dir_, step) + ".tmp"));
    EXPECT_FALSE(fs::exists(checkpoint_path(dir_, step)));
    write_ranks(dir_, step, 2, values(static_cast<float>(step)));
    EXPECT_EQ(finalize_checkpoint(dir_, step, 2, tiny_config(), "D2", training(step)),
              checkpoint_path(dir_, step));
    EXPECT_EQ(listing(checkpoint_path(dir_, step)),
              (std::vector<std::string>{"manifest.json", "rank-0.bin", "rank-1.bin"}));
    EXPECT_EQ(read_back(checkpoint_path(dir_, step)), values(static_cast<float>(step)));
  }
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"step-00000006", "step-00000007"}));
  EXPECT_EQ(newest_complete_checkpoint(dir_), dir_ + "/step-00000007");
  // A complete step is never prepared again; a file where the step folder goes is named.
  EXPECT_THAT(checkpoint_error([&] { prepare_checkpoint_step(dir_, 7); }),
              HasSubstr("step-00000007' is already complete"));
  std::ofstream(dir_ + "/step-00000009") << "a file";
  EXPECT_THAT(checkpoint_error([&] { prepare_checkpoint_step(dir_, 9); }),
              HasSubstr("step-00000009' exists and is not a folder"));
}

// Two jobs' saves of one step (issue 19: both failed in rename and one deleted the other's
// folder): each writes and completes its own step-N.tmp-<job>; neither removes the other's.
TEST_F(CheckpointFolder, AJobTouchesOnlyItsOwnTemporaryFolders) {
  write_ranks(dir_, 5, 2, values(50));  // a job without an id left step-5.tmp
  prepare_checkpoint_step(dir_, 5, "aaaa");
  prepare_checkpoint_step(dir_, 5, "bbbb");
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"step-00000005.tmp", "step-00000005.tmp-aaaa",
                                                    "step-00000005.tmp-bbbb"}));
  const std::vector<float> a = values(1), b = values(2);
  write_rank_shard(dir_, 5, 0, {{"params", 0, a.size(), a.data()}}, "aaaa");
  write_rank_shard(dir_, 5, 0, {{"params", 0, b.size(), b.data()}}, "bbbb");
  prepare_checkpoint_step(dir_, 5, "aaaa");  // job aaaa starts its save of step 5 again
  EXPECT_TRUE(fs::is_empty(dir_ + "/step-00000005.tmp-aaaa"));
  EXPECT_EQ(listing(dir_ + "/step-00000005.tmp-bbbb"), std::vector<std::string>{"rank-0.bin"})
      << "job aaaa removed job bbbb's rank file";
  EXPECT_EQ(finalize_checkpoint(dir_, 5, 1, tiny_config(), "D", training(5), "bbbb"),
            dir_ + "/step-00000005");
  EXPECT_EQ(read_back(dir_ + "/step-00000005"), b);
  // Job aaaa's save of the same step is refused (complete), its folder left as it is.
  EXPECT_THAT(checkpoint_error([&] { prepare_checkpoint_step(dir_, 5, "aaaa"); }),
              HasSubstr("step-00000005' is already complete"));
  EXPECT_EQ(leftover_saves(dir_, "aaaa"),
            (std::vector<std::string>{"step-00000005.tmp"}));
  EXPECT_EQ(leftover_saves(dir_, "cccc"),
            (std::vector<std::string>{"step-00000005.tmp", "step-00000005.tmp-aaaa"}));
  EXPECT_EQ(checkpoint_tmp_path(dir_, 5, ""), dir_ + "/step-00000005.tmp");
}

TEST_F(CheckpointFolder, CompleteCheckpointsAreListedNewestFirst) {
  EXPECT_TRUE(complete_checkpoints(dir_).empty()) << "a missing folder holds none";
  for (int64_t step : {3, 12, 7}) {
    write_ranks(dir_, step, 1, values(0));
    finalize_checkpoint(dir_, step, 1, tiny_config(), "D", training(step));
  }
  write_ranks(dir_, 20, 1, values(0));  // incomplete: step-20.tmp
  fs::create_directories(dir_ + "/step-00000030");  // no manifest
  const std::vector<CompleteCheckpoint> all = complete_checkpoints(dir_);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].step, 12);
  EXPECT_EQ(all[0].path, dir_ + "/step-00000012");
  EXPECT_EQ(all[1].step, 7);
  EXPECT_EQ(all[2].step, 3);
}

TEST(CheckpointTrainingState, TheLearningRateScheduleIsReadAndRangeChecked) {
  nlohmann::json t = {{"step", 4}, {"seed", 1}, {"global_batch", 8}, {"val_loss", nullptr}};
  EXPECT_FALSE(checkpoint_run("P", t, 4).schedule.has_value()) << "an earlier plexus-train's";
  t["lr_schedule"] = {{"lr", 3e-3f}, {"min_lr_ratio", 0.1f}, {"warmup_steps", 5},
                      {"decay_steps", 20}};
  const std::optional<LrSchedule> s = checkpoint_run("P", t, 4).schedule;
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(*s, (LrSchedule{3e-3f, 0.1f, 5, 20})) << "floats round-trip exactly";
  struct Forged {
    const char* field;
    nlohmann::json value;
    std::string message;
  };
  const Forged cases[] = {
      {"lr", 0, "training.lr_schedule.lr is 0; valid: a finite number > 0"},
      {"lr", 1e300, "training.lr_schedule.lr is 1e+300; valid: a finite number > 0"},
      {"lr", "fast", "training.lr_schedule.lr is \"fast\"; valid: a finite number > 0"},
      {"min_lr_ratio", -1, "training.lr_schedule.min_lr_ratio is -1; valid: a finite number >= 0"},
      {"warmup_steps", -3, "training.lr_schedule.warmup_steps is -3; valid: an integer >= 0"},
      {"decay_steps", 0, "training.lr_schedule.decay_steps is 0; valid: an integer >= 1"},
      {"decay_steps", 18446744073709551615ull,
       "training.lr_schedule.decay_steps is 18446744073709551615; valid: an integer >= 1"},
      {"decay_steps", nullptr, "training.lr_schedule.decay_steps is null; valid: an integer >= 1"},
  };
  for (const Forged& f : cases) {
    nlohmann::json forged = t;
    forged["lr_schedule"][f.field] = f.value;
    EXPECT_EQ(checkpoint_error([&] { checkpoint_run("P", forged, 4); }),
              "checkpoint P: manifest's " + f.message);
  }
  t["lr_schedule"] = 7;
  EXPECT_THAT(checkpoint_error([&] { checkpoint_run("P", t, 4); }),
              HasSubstr("manifest's training.lr_schedule is 7; valid: an object"));
}

TEST(CheckpointTrainingState, ValidFieldsAreRead) {
  const CheckpointRun run = checkpoint_run(
      "P", {{"step", 12}, {"seed", 18446744073709551615ull}, {"global_batch", 8},
            {"val_loss", 2.5}},
      12);
  EXPECT_EQ(run.next_step, 12);
  EXPECT_EQ(run.seed, 18446744073709551615ull);
  EXPECT_EQ(run.global_batch, 8);
  EXPECT_EQ(run.last_val_loss, 2.5f);
  EXPECT_TRUE(std::isnan(
      checkpoint_run("P", {{"step", 0}, {"seed", 0}, {"global_batch", 1}, {"val_loss", nullptr}},
                     0)
          .last_val_loss));
}

TEST(CheckpointTrainingState, ForgedFieldsAreRefusedNamingTheField) {
  const nlohmann::json good = {{"step", 12}, {"seed", 7}, {"global_batch", 8}, {"val_loss", 2.5}};
  struct Forged {
    const char* field;
    nlohmann::json value;
    std::string message;
  };
  const Forged cases[] = {
      {"step", 13, "training.step is 13; valid: 12 (the manifest's step)"},
      {"step", -1, "training.step is -1; valid: 12"},
      {"step", 12.5, "training.step is 12.5; valid: 12"},
      {"seed", -7, "training.seed is -7; valid: an integer in 0..2^64-1"},
      {"seed", "7", "training.seed is \"7\"; valid: an integer in 0..2^64-1"},
      {"global_batch", 0, "training.global_batch is 0; valid: 1..2147483647"},
      {"global_batch", 4294967304ll, "training.global_batch is 4294967304; valid: 1..2147483647"},
      {"val_loss", -0.5, "training.val_loss is -0.5; valid: null (none yet) or a finite loss >= 0"},
      {"val_loss", 1e300, "training.val_loss is 1e+300; valid: null"},
      {"val_loss", "low", "training.val_loss is \"low\"; valid: null"},
  };
  for (const Forged& f : cases) {
    nlohmann::json forged = good;
    forged[f.field] = f.value;
    EXPECT_EQ(checkpoint_error([&] { checkpoint_run("DIR/step-00000012", forged, 12); })
                  .find("checkpoint DIR/step-00000012: manifest's " + f.message),
              0u)
        << f.field << " = " << f.value.dump() << ": "
        << checkpoint_error([&] { checkpoint_run("DIR/step-00000012", forged, 12); });
  }
  nlohmann::json missing = good;
  missing.erase("seed");
  EXPECT_EQ(checkpoint_error([&] { checkpoint_run("P", missing, 12); }),
            "checkpoint P: manifest's training.seed is missing; valid: present");
}

// A manifest edited and given a matching checksum again (a forger's, not damage).
void forge_manifest(const std::string& path, const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream in(path + "/manifest.json");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json m = nlohmann::json::parse(text.str());
  edit(m);
  m["manifest_fnv1a64"] = manifest_checksum(m);
  std::ofstream(path + "/manifest.json", std::ios::trunc) << m.dump(1) << "\n";
}

TEST_F(CheckpointFolder, ForgedModelAndWorldSizeAreRefused) {
  write_ranks(dir_, 3, 1, values(0));
  const std::string path = finalize_checkpoint(dir_, 3, 1, tiny_config(), "D", training(3));
  forge_manifest(path, [](nlohmann::json& m) { m["model"]["n_embd"] = 4294967304ll; });
  EXPECT_EQ(checkpoint_error([&] { CheckpointReader reader(path); }),
            "checkpoint '" + path + "' has a malformed manifest.json: model.n_embd is "
            "4294967304, not an integer in int range");
  forge_manifest(path, [](nlohmann::json& m) { m["model"]["n_embd"] = -8; });
  EXPECT_EQ(checkpoint_error([&] { CheckpointReader reader(path); }),
            "checkpoint '" + path + "' has an invalid model in manifest.json: GptConfig: n_embd "
            "-8 not in 1..1048576");
  forge_manifest(path, [](nlohmann::json& m) {
    m["model"]["n_embd"] = 8;
    m["world_size"] = 0;
  });
  EXPECT_EQ(checkpoint_error([&] { CheckpointReader reader(path); }),
            "checkpoint '" + path + "' has world_size 0 in manifest.json; valid: 1 and up");
}

}  // namespace
}  // namespace plexus::engine
