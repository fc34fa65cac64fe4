#include "engine/data/text_dataset.h"

#include "engine/model/rng.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

namespace plexus::engine {

namespace {
// A well-mixed hash of one 64-bit value: the first output of splitmix64 seeded with it.
uint64_t mix(uint64_t x) { return SplitMix64(x).next(); }
}  // namespace

TextDataset::TextDataset(const std::string& path, int seq_len) : path_(path), seq_len_(seq_len) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!ec && std::filesystem::exists(status) && !std::filesystem::is_regular_file(status)) {
    throw DataError("data file '" + path + "' is not a regular file (a directory, device or FIFO)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw DataError("cannot read data file '" + path + "': " + std::strerror(errno) +
                    " (the set-up script fetches it: scripts/fetch-data.sh)");
  }
  bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (in.bad()) throw DataError("error reading data file '" + path + "': " + std::strerror(errno));
  train_end_ = bytes_.size() - bytes_.size() / 10;
  const size_t need = static_cast<size_t>(seq_len) + 1;
  if (seq_len < 1 || train_end_ < need || bytes_.size() - train_end_ < need) {
    throw DataError("data file '" + path + "' has " + std::to_string(bytes_.size()) +
                    " bytes: too short for windows of " + std::to_string(seq_len) +
                    "+1 tokens in both the training (90%) and validation (10%) splits");
  }
}

size_t TextDataset::size(Split split) const {
  return split == Split::kTrain ? train_end_ : bytes_.size() - train_end_;
}

void TextDataset::window(size_t offset, int32_t* tokens, int32_t* targets) const {
  for (int t = 0; t < seq_len_; ++t) {
    tokens[t] = bytes_[offset + t];
    targets[t] = bytes_[offset + t + 1];
  }
}

void TextDataset::train_batch(uint64_t seed, int64_t step, int first_row, int rows,
                              std::vector<int32_t>& tokens, std::vector<int32_t>& targets) const {
  tokens.resize(static_cast<size_t>(rows) * seq_len_);
  targets.resize(tokens.size());
  const uint64_t span = train_end_ - seq_len_;  // offsets 0..span-1 keep the target inside
  for (int i = 0; i < rows; ++i) {
    uint64_t row = static_cast<uint64_t>(first_row + i);
    uint64_t h = mix(mix(mix(seed) ^ static_cast<uint64_t>(step)) ^ row);
    window(h % span, &tokens[static_cast<size_t>(i) * seq_len_],
           &targets[static_cast<size_t>(i) * seq_len_]);
  }
}

void TextDataset::validation_batch(int index, int num_batches, int global_rows, int first_row,
                                   int rows, std::vector<int32_t>& tokens,
                                   std::vector<int32_t>& targets) const {
  tokens.resize(static_cast<size_t>(rows) * seq_len_);
  targets.resize(tokens.size());
  const size_t span = size(Split::kValidation) - seq_len_;
  const size_t windows = static_cast<size_t>(num_batches) * global_rows;
  for (int i = 0; i < rows; ++i) {
    size_t w = static_cast<size_t>(index) * global_rows + first_row + i;
    size_t offset = train_end_ + (w * span) / windows;
    window(offset, &tokens[static_cast<size_t>(i) * seq_len_],
           &targets[static_cast<size_t>(i) * seq_len_]);
  }
}

void TextDataset::validation_windows(size_t first, int rows, std::vector<int32_t>& tokens,
                                     std::vector<int32_t>& targets) const {
  tokens.resize(static_cast<size_t>(rows) * seq_len_);
  targets.resize(tokens.size());
  for (int i = 0; i < rows; ++i) {
    window(train_end_ + (first + i) * static_cast<size_t>(seq_len_),
           &tokens[static_cast<size_t>(i) * seq_len_], &targets[static_cast<size_t>(i) * seq_len_]);
  }
}

}  // namespace plexus::engine
