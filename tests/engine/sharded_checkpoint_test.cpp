// sharded_checkpoint_test.cpp - the universal sharded checkpoint (engine/checkpoint/
// sharded_checkpoint.h) with real shard tables: "ranks" of one placement (tensor parallel x
// data-parallel shares, pipeline chunks) write their pieces of a random model, optimizer state
// included, and other placements read it back bit for bit; the newest complete checkpoint skips
// incomplete ones; every kind of damage is refused with a CheckpointError naming the path and
// the problem, and loading leaves every byte in the folder as it was.
#include "engine/checkpoint/sharded_checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <sstream>

#include "engine/checkpoint/shard_file.h"
#include "tests/support/temp_dir.h"

namespace plexus::engine {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const char* const kSections[] = {"params", "adam_m", "adam_v"};

GptConfig small_config() {
  // vocabulary 13: padded to 14 under tp 2 and 16 under tp 4
  return {.vocab_size = 13, .max_seq_len = 8, .n_layer = 4, .n_head = 4, .n_embd = 16};
}

size_t shard_size(const std::vector<ShardTensor>& tensors) {
  return tensors.empty() ? 0 : tensors.back().offset + tensors.back().numel();
}

// A model's full state: one random Gpt-layout buffer per section.
struct FullState {
  std::map<std::string, std::vector<float>> sections;
};

FullState random_state(const GptConfig& c, uint32_t seed) {
  FullState s;
  std::mt19937 gen(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  for (const char* name : kSections) {
    std::vector<float>& v = s.sections[name];
    v.resize(full_num_params(c));
    for (float& x : v) x = dist(gen);
  }
  return s;
}

// A placement: its shards (one per pipeline chunk x tensor rank) and how many data-parallel
// ranks share each shard's elements (ZeRO-style: rank d holds [d*n/D, (d+1)*n/D) of the shard).
struct Layout {
  std::string name;
  std::vector<ShardSpec> shards;
  int data_shares = 1;
  int world_size() const { return static_cast<int>(shards.size()) * data_shares; }
};

Layout tp2_d2() {
  return {"T2D2", {{0, 4, true, true, 2, 0}, {0, 4, true, true, 2, 1}}, 2};
}
Layout p3() {
  return {"P3",
          {{0, 2, true, false, 1, 0}, {2, 3, false, false, 1, 0},
           {3, 4, false, true, 1, 0}},
          1};
}
Layout whole() { return {"whole", {{0, 4, true, true, 1, 0}}, 1}; }
Layout p2_t4() {
  Layout l{"P2T4", {}, 1};
  for (int p = 0; p < 2; ++p) {
    for (int t = 0; t < 4; ++t) l.shards.push_back({2 * p, 2 * p + 2, p == 0, p == 1, 4, t});
  }
  return l;
}

nlohmann::json checkpoint_run(int64_t step) {
  return {{"optimizer_step", step}, {"data_position", step}, {"seed", 1234},
          {"rng", "0x9e3779b97f4a7c15"}, {"val_loss", 2.718281828f}};
}

// Every rank of `layout` writes its owned runs of `sections` from a buffer holding only its
// partition (as ZeRO keeps it); then rank 0 finalizes. Returns the checkpoint's path.
std::string save(const std::string& dir, int64_t step, const Layout& layout,
                 const FullState& state,
                 const std::vector<std::string>& sections = {"params", "adam_m", "adam_v"}) {
  const GptConfig c = small_config();
  int rank = 0;
  for (const ShardSpec& s : layout.shards) {
    const std::vector<ShardTensor> tensors = shard_tensors(c, s);
    const size_t n = shard_size(tensors);
    const std::vector<FullRun> owned = owned_full_runs(tensors, s);
    for (int d = 0; d < layout.data_shares; ++d) {
      const size_t begin = d * n / layout.data_shares, end = (d + 1) * n / layout.data_shares;
      const std::vector<FullRun> mine = clip_runs(owned, begin, end);
      std::vector<std::vector<float>> partitions;  // kept alive until written
      std::vector<StateRun> runs;
      for (const std::string& section : sections) {
        std::vector<float> local(n);
        extract_from_full(tensors, state.sections.at(section).data(), local.data());
        partitions.emplace_back(local.begin() + begin, local.begin() + end);
        for (StateRun& r : state_runs(section, mine, partitions.back().data(), begin)) {
          runs.push_back(std::move(r));
        }
      }
      write_rank_shard(dir, step, rank++, runs);
    }
  }
  return finalize_checkpoint(dir, step, rank, c, layout.name, checkpoint_run(step));
}

// Every shard of `layout` reads all its elements (replicated copies and padding-free wte
// included) and must equal extract_from_full of the saved state, bit for bit.
void expect_loads_as(const std::string& path, const Layout& layout, const FullState& state) {
  SCOPED_TRACE("loaded as " + layout.name);
  const GptConfig c = small_config();
  CheckpointReader reader(path);
  reader.check_model(c);
  for (const ShardSpec& s : layout.shards) {
    const std::vector<ShardTensor> tensors = shard_tensors(c, s);
    const size_t n = shard_size(tensors);
    for (const char* section : kSections) {
      std::vector<float> expected(n), got(n, 0.0f);
      extract_from_full(tensors, state.sections.at(section).data(), expected.data());
      reader.read(state_targets(section, full_runs(tensors), got.data()));
      ASSERT_EQ(std::memcmp(expected.data(), got.data(), n * sizeof(float)), 0)
          << section << " of shard " << s.describe();
      // A ZeRO partition [n/3, 2n/3) read into its own buffer.
      const size_t b = n / 3, e = 2 * n / 3;
      std::vector<float> part(e - b, 0.0f);
      reader.read(state_targets(section, clip_runs(full_runs(tensors), b, e), part.data(), b));
      ASSERT_EQ(std::memcmp(expected.data() + b, part.data(), part.size() * sizeof(float)), 0)
          << section << " partition of shard " << s.describe();
    }
  }
}

uint64_t hash_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string s = ss.str();
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ULL;
  return h ^ (s.size() << 1);
}

// Every path under dir with its content's hash (directories: 0).
std::map<std::string, uint64_t> snapshot(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    out[e.path().string()] = e.is_regular_file() ? hash_bytes(e.path().string()) : 0;
  }
  return out;
}

void flip_byte(const std::string& path, uint64_t offset) {
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(static_cast<std::streamoff>(offset));
  char c = 0;
  f.get(c);
  f.seekp(static_cast<std::streamoff>(offset));
  f.put(static_cast<char>(c ^ 0x10));
}

// Runs `load` and expects a CheckpointError containing every one of `needles`, with nothing
// under `dir` changed.
void expect_refused(const std::string& dir, const std::function<void()>& load,
                    const std::vector<std::string>& needles) {
  const auto before = snapshot(dir);
  try {
    load();
    ADD_FAILURE() << "no CheckpointError";
  } catch (const CheckpointError& e) {
    for (const std::string& n : needles) EXPECT_THAT(e.what(), HasSubstr(n));
  }
  EXPECT_EQ(snapshot(dir), before) << "loading changed the folder";
}

class ShardedCheckpoint : public ::testing::Test {
 protected:
  test::TempDir tmp_{"plexus-sharded-ckpt"};
  std::string dir_ = tmp_.path() + "/ckpt";
  FullState state_ = random_state(small_config(), 42);
};

TEST_F(ShardedCheckpoint, SavedUnderOnePlacementLoadsUnderAnyOther) {
  ASSERT_FALSE(tmp_.path().empty());
  for (const Layout& saved : {tp2_d2(), p3(), whole(), p2_t4()}) {
    SCOPED_TRACE("saved as " + saved.name);
    const std::string sub = dir_ + "/" + saved.name;
    const std::string path = save(sub, 12, saved, state_);
    EXPECT_EQ(path, sub + "/step-00000012");
    EXPECT_FALSE(fs::exists(path + ".tmp"));
    const auto before = snapshot(sub);
    for (const Layout& loaded : {whole(), p3(), p2_t4(), tp2_d2()}) {
      expect_loads_as(path, loaded, state_);
    }
    EXPECT_EQ(snapshot(sub), before) << "loading changed the folder";
    CheckpointReader reader(path);
    EXPECT_EQ(reader.step(), 12);
    EXPECT_EQ(reader.world_size(), saved.world_size());
    EXPECT_EQ(reader.placement(), saved.name);
    EXPECT_EQ(reader.training(), checkpoint_run(12));
    EXPECT_EQ(reader.sections(), (std::vector<std::string>{"params", "adam_m", "adam_v"}));
    const nlohmann::json& m = reader.manifest();
    EXPECT_EQ(m.at("model").at("n_embd"), 16);
    EXPECT_EQ(m.at("full_num_params").get<size_t>(), full_num_params(small_config()));
    EXPECT_EQ(m.at("tensors").at(0).at("name"), "wte");
    EXPECT_EQ(m.at("tensors").at(0).at("shape"), (std::vector<int>{13, 16}));
  }
}

TEST_F(ShardedCheckpoint, WholeModelReadsBackInOneTarget) {
  const std::string path = save(dir_, 3, tp2_d2(), state_);
  CheckpointReader reader(path);
  for (const char* section : kSections) {
    std::vector<float> full(full_num_params(small_config()), -1.0f);
    reader.read({{section, 0, full.size(), full.data()}});
    EXPECT_EQ(std::memcmp(full.data(), state_.sections[section].data(), full.size() * 4), 0)
        << section;
    float one = 0;
    reader.read({{section, full.size() - 1, 1, &one}});
    EXPECT_EQ(one, state_.sections[section].back());
  }
}

TEST_F(ShardedCheckpoint, NewestCompleteSkipsIncompleteAndUnrelated) {
  EXPECT_EQ(newest_complete_checkpoint(dir_), std::nullopt) << "no folder yet";
  save(dir_, 5, p3(), state_);
  save(dir_, 9, tp2_d2(), state_);
  // A save interrupted before finalize: step-12.tmp with some rank files and no manifest.
  write_rank_shard(dir_, 12, 0, {{"params", 0, 4, state_.sections["params"].data()}});
  fs::create_directories(dir_ + "/step-00000030");  // a step folder without a manifest
  fs::create_directories(dir_ + "/step-abc");
  std::ofstream(dir_ + "/notes.txt") << "not a checkpoint\n";
  std::ofstream(dir_ + "/step-00000040") << "a file, not a folder\n";
  const auto before = snapshot(dir_);
  EXPECT_EQ(newest_complete_checkpoint(dir_), dir_ + "/step-00000009");
  EXPECT_EQ(snapshot(dir_), before);
  EXPECT_TRUE(fs::exists(dir_ + "/step-00000012.tmp/rank-0.bin"));
  // Completing step 12 makes it the newest; nothing else was touched.
  std::vector<float> rest(state_.sections["params"].begin() + 4,
                          state_.sections["params"].end());
  write_rank_shard(dir_, 12, 1, {{"params", 4, rest.size(), rest.data()}});
  finalize_checkpoint(dir_, 12, 2, small_config(), "D2", checkpoint_run(12));
  EXPECT_EQ(newest_complete_checkpoint(dir_), dir_ + "/step-00000012");
  EXPECT_TRUE(fs::exists(dir_ + "/notes.txt"));
  EXPECT_TRUE(fs::exists(dir_ + "/step-00000005/manifest.json"));
  EXPECT_TRUE(fs::exists(dir_ + "/step-00000030"));

  std::ofstream(tmp_.path() + "/plain") << "x";
  EXPECT_THROW(newest_complete_checkpoint(tmp_.path() + "/plain"), CheckpointError);
}

TEST_F(ShardedCheckpoint, DamagedCheckpointsAreRefusedAndLeftAsTheyAre) {
  const std::string path = save(dir_, 7, tp2_d2(), state_);
  auto open = [&] {
    CheckpointReader reader(*newest_complete_checkpoint(dir_));
    std::vector<float> p(10);
    reader.read({{"params", 0, 10, p.data()}});
  };
  auto fresh = [&] {  // an undamaged copy of the checkpoint at `path`
    fs::remove_all(dir_);
    save(dir_, 7, tp2_d2(), state_);
  };
  {
    SCOPED_TRACE("truncated");
    fs::resize_file(path + "/rank-1.bin", fs::file_size(path + "/rank-1.bin") - 10);
    expect_refused(dir_, open, {path, "rank-1.bin has", "truncated"});
  }
  {
    SCOPED_TRACE("a flipped byte in the data");
    fresh();
    flip_byte(path + "/rank-2.bin", fs::file_size(path + "/rank-2.bin") / 2);
    expect_refused(dir_, open, {path, "rank-2.bin fails its checksum", "corrupt"});
  }
  {
    SCOPED_TRACE("a flipped byte in a rank file's header");
    fresh();
    flip_byte(path + "/rank-0.bin", 20);
    expect_refused(dir_, open, {path, "rank-0.bin fails its checksum"});
  }
  {
    SCOPED_TRACE("a missing rank file");
    fresh();
    fs::remove(path + "/rank-3.bin");
    expect_refused(dir_, open, {path, "rank-3.bin is missing"});
  }
  {
    SCOPED_TRACE("a rank file from another checkpoint");
    fresh();
    const std::string other =
        save(tmp_.path() + "/other", 7, tp2_d2(), random_state(small_config(), 7));
    fs::copy_file(other + "/rank-1.bin", path + "/rank-1.bin",
                  fs::copy_options::overwrite_existing);
    expect_refused(dir_, open, {path, "rank-1.bin has checksum", "not the file saved"});
  }
  {
    SCOPED_TRACE("manifest not JSON");
    fresh();
    fs::resize_file(path + "/manifest.json", fs::file_size(path + "/manifest.json") / 2);
    expect_refused(dir_, open, {path, "manifest.json", "not valid JSON"});
  }
  {
    SCOPED_TRACE("manifest edited");
    fresh();
    std::ifstream in(path + "/manifest.json");
    nlohmann::json m = nlohmann::json::parse(in);
    in.close();
    m["training"]["optimizer_step"] = 8;
    std::ofstream(path + "/manifest.json") << m.dump(1);
    expect_refused(dir_, open, {path, "manifest.json", "fails its checksum"});
  }
  {
    SCOPED_TRACE("another model");
    fresh();
    GptConfig other = small_config();
    other.n_embd = 32;
    expect_refused(dir_, [&] { CheckpointReader(path).check_model(other); },
                   {"checkpoint " + path + " was saved for n_embd 16; this run has n_embd 32"});
    other = small_config();
    other.n_layer = 6;
    expect_refused(dir_, [&] { CheckpointReader(path).check_model(other); },
                   {"was saved for n_layer 4; this run has n_layer 6"});
  }
  {
    SCOPED_TRACE("a missing section and a range outside the model");
    fs::remove_all(dir_);
    const std::string params_only = save(dir_, 7, p3(), state_, {"params"});
    std::vector<float> m(4);
    expect_refused(dir_, [&] { CheckpointReader(params_only).read({{"adam_m", 0, 4, m.data()}}); },
                   {params_only, "has no section 'adam_m' (it has: params)"});
    const size_t n = full_num_params(small_config());
    expect_refused(dir_,
                   [&] { CheckpointReader(params_only).read({{"params", n - 2, 4, m.data()}}); },
                   {params_only, "outside the model"});
  }
  {
    SCOPED_TRACE("an incomplete step folder");
    expect_refused(dir_, [&] { CheckpointReader(dir_ + "/step-00000099"); }, {"does not exist"});
    fs::create_directories(dir_ + "/step-00000099");
    expect_refused(dir_, [&] { CheckpointReader(dir_ + "/step-00000099"); },
                   {"step-00000099", "has no manifest.json"});
  }
}

// Fields that pass their checksum but were written wrong (crafted): an integer field holding a
// float or a negative number is refused by name, never converted (a float out of range would be
// undefined behaviour). Found by tests/fuzz/ (shard_file, checkpoint_manifest).
TEST_F(ShardedCheckpoint, CraftedIntegerFieldsAreRefusedByName) {
  const std::string path = save(dir_, 7, tp2_d2(), state_);
  const std::string manifest_path = path + "/manifest.json";
  std::ifstream in(manifest_path);
  const nlohmann::json saved = nlohmann::json::parse(in);
  in.close();
  const auto with = [&](const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json m = saved;
    edit(m);
    m["manifest_fnv1a64"] = manifest_checksum(m);
    std::ofstream(manifest_path) << m.dump(1);
  };
  const auto open = [&] { CheckpointReader reader(path); };
  with([](nlohmann::json& m) { m["step"] = 1e300; });
  expect_refused(dir_, open, {path, "manifest.json: step is 1e+300, not an integer in 0.."});
  with([](nlohmann::json& m) { m["full_num_params"] = -1.5; });
  expect_refused(dir_, open, {path, "full_num_params is -1.5, not an integer in 0.."});
  with([](nlohmann::json& m) { m["files"][1]["bytes"] = -4; });
  expect_refused(dir_, open, {path, "files[1].bytes is -4, not an integer in 0.."});

  // A rank file whose header says rank 1.5, framed and checksummed as a writer would.
  const std::string header =
      R"({"format":"plexus-shard","version":1,"rank":1.5,"step":7,"sections":[],"runs":[]})";
  std::string bytes = "PLXSHRD1";
  const uint64_t header_bytes = header.size();
  bytes.append(reinterpret_cast<const char*>(&header_bytes), 8).append(header);
  Fnv1a sum;
  sum.update(bytes.data(), bytes.size());
  bytes.append(reinterpret_cast<const char*>(&sum.hash), 8);
  std::ofstream(path + "/rank-9.bin", std::ios::binary) << bytes;
  expect_refused(dir_, [&] { read_shard_file(path, "rank-9.bin"); },
                 {"checkpoint '" + path + "': rank-9.bin has a malformed header: rank is 1.5; "
                  "valid: an integer in 0..2147483647"});
}

TEST_F(ShardedCheckpoint, FinalizeRefusesGapsAndOverlaps) {
  const std::vector<float>& p = state_.sections["params"];
  const size_t n = p.size();
  // A gap: elements [100, 120) are written by no rank.
  write_rank_shard(dir_, 4, 0, {{"params", 0, 100, p.data()}});
  write_rank_shard(dir_, 4, 1, {{"params", 120, n - 120, p.data() + 120}});
  try {
    finalize_checkpoint(dir_, 4, 2, small_config(), "D2", checkpoint_run(4));
    ADD_FAILURE() << "a gap was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_THAT(e.what(), HasSubstr("step-00000004.tmp"));
    EXPECT_THAT(e.what(), HasSubstr("section 'params' has a gap: elements [100, 120)"));
  }
  EXPECT_FALSE(fs::exists(dir_ + "/step-00000004"));
  EXPECT_EQ(newest_complete_checkpoint(dir_), std::nullopt);
  // An overlap: [100, 130) twice.
  write_rank_shard(dir_, 5, 0, {{"params", 0, 130, p.data()}});
  write_rank_shard(dir_, 5, 1, {{"params", 100, n - 100, p.data() + 100}});
  try {
    finalize_checkpoint(dir_, 5, 2, small_config(), "D2", checkpoint_run(5));
    ADD_FAILURE() << "an overlap was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_THAT(e.what(), HasSubstr("has an overlap: elements [100, 130) are in both rank-0.bin "
                                    "and rank-1.bin"));
  }
  // A section that covers only part of the model, beside a complete one.
  write_rank_shard(dir_, 6, 0, {{"params", 0, n, p.data()}, {"adam_m", 0, 10, p.data()}});
  EXPECT_THROW(finalize_checkpoint(dir_, 6, 1, small_config(), "D", checkpoint_run(6)),
               CheckpointError);
  // A rank that never wrote.
  write_rank_shard(dir_, 8, 0, {{"params", 0, n, p.data()}});
  try {
    finalize_checkpoint(dir_, 8, 2, small_config(), "D2", checkpoint_run(8));
    ADD_FAILURE() << "a missing rank file was accepted";
  } catch (const CheckpointError& e) {
    EXPECT_THAT(e.what(), HasSubstr("rank-1.bin is missing"));
  }
  // Completing a step twice is refused; the complete one stays.
  finalize_checkpoint(dir_, 8, 1, small_config(), "D", checkpoint_run(8));
  const auto before = snapshot(dir_);
  EXPECT_THROW(write_rank_shard(dir_, 8, 0, {{"params", 0, n, p.data()}}), CheckpointError);
  EXPECT_THROW(finalize_checkpoint(dir_, 8, 1, small_config(), "D", checkpoint_run(8)),
               CheckpointError);
  EXPECT_EQ(snapshot(dir_), before);
  EXPECT_EQ(newest_complete_checkpoint(dir_), dir_ + "/step-00000008");
}

TEST_F(ShardedCheckpoint, BadArgumentsNameTheArgument) {
  float x = 0;
  EXPECT_THROW(write_rank_shard(dir_, -1, 0, {}), std::invalid_argument);
  EXPECT_THROW(write_rank_shard(dir_, 1, -2, {}), std::invalid_argument);
  try {
    write_rank_shard(dir_, 1, 3, {{"params", 0, 1, &x}, {"params", 1, 2, nullptr}});
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("write_rank_shard: rank 3: run 1 (section 'params', 2 "
                                    "elements) has no data"));
  }
  EXPECT_THROW(finalize_checkpoint(dir_, 1, 0, small_config(), "D", {}), std::invalid_argument);
  EXPECT_THROW(state_runs("params", {{5, 0, 1}}, &x, 6), std::invalid_argument);
  EXPECT_EQ(checkpoint_path("/x", 123456789), "/x/step-123456789");
}

}  // namespace
}  // namespace plexus::engine
