#include "engine/data/text_dataset.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace plexus::engine {
namespace {

using ::testing::HasSubstr;

class TextDatasetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("plexus_text_" + std::to_string(getpid()) + ".txt")).string();
    std::ofstream out(path_, std::ios::binary);
    for (int i = 0; i < 1000; ++i) out.put(static_cast<char>(i % 251));
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_;
};

TEST_F(TextDatasetTest, SplitsNinetyTen) {
  TextDataset data(path_, 16);
  EXPECT_EQ(data.size(Split::kTrain), 900u);
  EXPECT_EQ(data.size(Split::kValidation), 100u);
}

TEST_F(TextDatasetTest, TargetsAreTokensShiftedByOne) {
  TextDataset data(path_, 16);
  std::vector<int32_t> x, y;
  data.train_batch(7, 3, 0, 4, x, y);
  ASSERT_EQ(x.size(), 64u);
  for (int r = 0; r < 4; ++r) {
    for (int t = 0; t < 16; ++t) {
      // the file is i % 251, so each next byte is the previous plus one (mod 251)
      EXPECT_EQ(y[r * 16 + t], (x[r * 16 + t] + 1) % 251) << "row " << r << " t " << t;
      if (t > 0) {
        EXPECT_EQ(x[r * 16 + t], y[r * 16 + t - 1]);
      }
    }
  }
}

TEST_F(TextDatasetTest, RowsDoNotDependOnHowTheBatchIsSplit) {
  TextDataset data(path_, 16);
  std::vector<int32_t> whole, whole_y, part, part_y;
  data.train_batch(7, 5, 0, 8, whole, whole_y);
  for (int rank = 0; rank < 4; ++rank) {
    data.train_batch(7, 5, rank * 2, 2, part, part_y);
    for (size_t i = 0; i < part.size(); ++i) {
      EXPECT_EQ(part[i], whole[rank * 32 + i]) << "rank " << rank << " index " << i;
    }
  }
  data.validation_batch(1, 3, 8, 0, 8, whole, whole_y);
  data.validation_batch(1, 3, 8, 6, 2, part, part_y);
  for (size_t i = 0; i < part.size(); ++i) EXPECT_EQ(part[i], whole[6 * 16 + i]);
}

TEST_F(TextDatasetTest, StepsAndSeedsGiveDifferentBatches) {
  TextDataset data(path_, 16);
  std::vector<int32_t> a, b, y;
  data.train_batch(7, 0, 0, 4, a, y);
  data.train_batch(7, 1, 0, 4, b, y);
  EXPECT_NE(a, b);
  data.train_batch(8, 0, 0, 4, b, y);
  EXPECT_NE(a, b);
  data.train_batch(7, 0, 0, 4, b, y);
  EXPECT_EQ(a, b);
}

TEST_F(TextDatasetTest, ValidationWindowsStayInValidationSplit) {
  TextDataset data(path_, 16);
  std::vector<int32_t> x, y;
  // validation bytes are positions 900..999, i.e. values (900..999) % 251
  for (int i = 0; i < 4; ++i) {
    data.validation_batch(i, 4, 2, 0, 2, x, y);
    for (int32_t v : x) {
      bool inside = false;
      for (int pos = 900; pos < 1000; ++pos) inside |= (pos % 251) == v;
      EXPECT_TRUE(inside) << v;
    }
  }
}

TEST_F(TextDatasetTest, MissingFileIsAClearError) {
  try {
    TextDataset data("/nonexistent/moby.txt", 16);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot read data file '/nonexistent/moby.txt'"));
    EXPECT_THAT(e.what(), HasSubstr("No such file or directory"));
  }
}

TEST_F(TextDatasetTest, TooShortFileIsAClearError) {
  try {
    TextDataset data(path_, 200);
    FAIL() << "no error";
  } catch (const DataError& e) {
    EXPECT_THAT(e.what(), HasSubstr("too short"));
  }
}

}  // namespace
}  // namespace plexus::engine
