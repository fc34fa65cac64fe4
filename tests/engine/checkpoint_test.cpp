#include "engine/checkpoint/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tests/support/crafted_checkpoint.h"

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("plexus_ckpt_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "sub" / "model.ckpt").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  Checkpoint sample() const {
    Checkpoint ck;
    ck.header["step"] = 17;
    ck.header["model"] = {{"n_layer", 2}};
    ck.sections.push_back({"params", {1.5f, -2.25f, 3.0f}});
    ck.sections.push_back({"adam_m", {0.125f}});
    ck.sections.push_back({"adam_v", {}});
    return ck;
  }

  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(CheckpointTest, RoundTripsHeaderAndSections) {
  save_checkpoint(path_, sample());
  EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
  Checkpoint back = load_checkpoint(path_);
  EXPECT_EQ(back.header.at("step").get<int>(), 17);
  EXPECT_EQ(back.header.at("model").at("n_layer").get<int>(), 2);
  ASSERT_NE(back.find("params"), nullptr);
  EXPECT_EQ(*back.find("params"), (std::vector<float>{1.5f, -2.25f, 3.0f}));
  EXPECT_EQ(*back.find("adam_m"), (std::vector<float>{0.125f}));
  EXPECT_TRUE(back.find("adam_v")->empty());
  EXPECT_EQ(back.find("missing"), nullptr);
}

TEST_F(CheckpointTest, OverwriteReplacesWholeFile) {
  save_checkpoint(path_, sample());
  Checkpoint second = sample();
  second.header["step"] = 99;
  second.sections[0].data = {7.0f};
  save_checkpoint(path_, second);
  Checkpoint back = load_checkpoint(path_);
  EXPECT_EQ(back.header.at("step").get<int>(), 99);
  EXPECT_EQ(*back.find("params"), std::vector<float>{7.0f});
}

TEST_F(CheckpointTest, FlippedByteIsRefusedAsCorrupt) {
  save_checkpoint(path_, sample());
  std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(-12, std::ios::end);  // inside the last float section
  char c = 0x5a;
  f.write(&c, 1);
  f.close();
  try {
    load_checkpoint(path_);
    FAIL() << "a corrupt checkpoint loaded";
  } catch (const CheckpointError& e) {
    EXPECT_THAT(e.what(), HasSubstr("checksum mismatch"));
    EXPECT_THAT(e.what(), HasSubstr(path_));
  }
}

TEST_F(CheckpointTest, TruncatedFileIsRefused) {
  save_checkpoint(path_, sample());
  std::filesystem::resize_file(path_, std::filesystem::file_size(path_) / 2);
  EXPECT_THROW(load_checkpoint(path_), CheckpointError);
}

TEST_F(CheckpointTest, SavingThroughASymlinkWritesItsTarget) {
  save_checkpoint(path_, sample());
  const std::string link = (dir_ / "latest.ckpt").string();
  std::filesystem::create_symlink(path_, link);
  Checkpoint second = sample();
  second.header["step"] = 42;
  save_checkpoint(link, second);
  EXPECT_TRUE(std::filesystem::is_symlink(link)) << "the link was replaced by a file";
  EXPECT_EQ(load_checkpoint(path_).header.at("step").get<int>(), 42);
}

TEST_F(CheckpointTest, NonRegularTargetsAreRefused) {
  const std::string folder = (dir_ / "a_folder").string();
  std::filesystem::create_directories(folder);
  try {
    save_checkpoint(folder, sample());
    FAIL() << "saved over a directory";
  } catch (const CheckpointError& e) {
    EXPECT_THAT(e.what(), HasSubstr("checkpoint '" + folder +
                                    "' exists and is a folder; refusing to replace it"));
  }
  EXPECT_TRUE(std::filesystem::is_directory(folder));
  // A FIFO, and a symbolic link to one (followed, then refused): both left as they are.
  const std::string fifo = (dir_ / "a_fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string link = (dir_ / "to_fifo").string();
  std::filesystem::create_symlink(fifo, link);
  for (const std::string& target : {fifo, link}) {
    try {
      save_checkpoint(target, sample());
      ADD_FAILURE() << "saved over " << target;
    } catch (const CheckpointError& e) {
      EXPECT_THAT(e.what(), HasSubstr("' exists and is a FIFO; refusing to replace it"));
    }
  }
  EXPECT_EQ(std::filesystem::symlink_status(fifo).type(), std::filesystem::file_type::fifo);
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_THROW(load_checkpoint("/dev/zero"), CheckpointError);
}

// Crafted headers that pass the checksum are refused naming the file, the field and its value;
// nothing but CheckpointError leaves load_checkpoint (no nlohmann exception, no bad_alloc).
TEST_F(CheckpointTest, CraftedHeadersAreRefusedNamingTheFieldAndValue) {
  const std::string file = (dir_ / "crafted.ckpt").string();
  struct Crafted {
    std::string header;
    size_t floats;
    std::string message;
  };
  const Crafted cases[] = {
      {"[1,2]", 0, "header field (header) is [1,2]; valid: a JSON object"},
      {"{}", 0, "header field sections is null; valid: an array of {name, count}"},
      {R"({"sections": {"name": "params"}})", 0, "header field sections is {\"name\":"},
      {R"({"sections": [7]})", 0, "header field sections[0] is 7; valid: an object with a string "
                                  "name and a count"},
      {R"({"sections": [{"name": 3, "count": 1}]})", 1, "header field sections[0] is"},
      {R"({"sections": [{"name": "params", "count": "2"}]})", 2,
       "header field sections[0].count is \"2\"; valid: an integer >= 0"},
      {R"({"sections": [{"name": "params", "count": -1}]})", 0,
       "header field sections[0].count is -1; valid: an integer >= 0"},
      {R"({"sections": [{"name": "params", "count": 1.5}]})", 1,
       "header field sections[0].count is 1.5; valid: an integer >= 0"},
      {R"({"sections": [{"name": "params", "count": 4611686018427387904}]})", 2,
       "is corrupt or incomplete: section 'params' (sections[0].count 4611686018427387904 "
       "floats) past the end of the file (2 floats left)"},
      {R"({"sections": [{"name": "params", "count": 1}]})", 2,
       "is corrupt or incomplete: trailing bytes after the last section"},
  };
  for (const Crafted& c : cases) {
    SCOPED_TRACE(c.header);
    test::write_crafted_checkpoint(file, c.header, c.floats);
    try {
      load_checkpoint(file);
      ADD_FAILURE() << "a crafted header loaded";
    } catch (const CheckpointError& e) {
      EXPECT_THAT(e.what(), HasSubstr("checkpoint '" + file + "'"));
      EXPECT_THAT(e.what(), HasSubstr(c.message));
    }
  }
  test::write_crafted_checkpoint(file, R"({"sections": [{"name": "params", "count": 2}]})", 2);
  const Checkpoint ok = load_checkpoint(file);
  EXPECT_EQ(*ok.find("params"), (std::vector<float>{0.0f, 0.0f}));
}

TEST_F(CheckpointTest, MissingFileNamesPath) {
  try {
    load_checkpoint((dir_ / "nope.ckpt").string());
    FAIL() << "a missing checkpoint loaded";
  } catch (const CheckpointError& e) {
    EXPECT_THAT(e.what(), HasSubstr("nope.ckpt"));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
}

}  // namespace
}  // namespace plexus::engine
