// text_dataset.h - a byte-level text corpus (vocabulary 256) split into training and validation.
//
// Tokens are the file's bytes. The first 90% of the bytes are the training split and the last 10%
// the validation split. Batches are drawn so that data parallelism is exact: the rows of global
// batch `step` do not depend on the number of ranks, and rank r of D takes rows
// [r*B/D, (r+1)*B/D).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace plexus::engine {

class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Split { kTrain, kValidation };

class TextDataset {
 public:
  // Reads the whole file. Throws DataError naming the path and the OS error when it is missing or
  // unreadable, or when it is too short for `seq_len`.
  TextDataset(const std::string& path, int seq_len);

  size_t size(Split split) const;
  const std::string& path() const { return path_; }

  // Fills tokens and targets (rows x seq_len, row-major) with rows [first_row, first_row + rows)
  // of training batch `step` of `global_rows` rows: each row is a window at an offset drawn from
  // (seed, step, row), and targets are the tokens shifted by one.
  void train_batch(uint64_t seed, int64_t step, int first_row, int rows,
                   std::vector<int32_t>& tokens, std::vector<int32_t>& targets) const;

  // Validation batch `index` of `global_rows` rows: fixed, evenly spaced windows over the
  // validation split; this rank's rows [first_row, first_row + rows).
  void validation_batch(int index, int num_batches, int global_rows, int first_row, int rows,
                        std::vector<int32_t>& tokens, std::vector<int32_t>& targets) const;

  // The whole validation split as non-overlapping windows (plexus-train --evaluate): window w
  // has as tokens validation bytes [w*seq_len, (w+1)*seq_len) and as targets those shifted by
  // one, so every validation byte but the first is a target exactly once, except the tail: the
  // (size(kValidation) - 1) % seq_len last targets, too few for a window, are left out.
  size_t validation_windows() const { return (size(Split::kValidation) - 1) / seq_len_; }
  // Windows [first, first + rows) of those (first + rows <= validation_windows()).
  void validation_windows(size_t first, int rows, std::vector<int32_t>& tokens,
                          std::vector<int32_t>& targets) const;

 private:
  void window(size_t offset, int32_t* tokens, int32_t* targets) const;

  std::string path_;
  std::vector<uint8_t> bytes_;
  size_t train_end_ = 0;
  int seq_len_ = 0;
};

}  // namespace plexus::engine
