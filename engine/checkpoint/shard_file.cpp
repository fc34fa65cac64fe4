// shard_file.cpp - writing, reading and verifying one rank's file of a sharded checkpoint, and
// the coverage check over a checkpoint's files (shard_file.h).
#include "engine/checkpoint/shard_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "topology/json_depth.h"
#include "topology/output_path.h"

namespace plexus::engine {

namespace {

constexpr char kMagic[8] = {'P', 'L', 'X', 'S', 'H', 'R', 'D', '1'};
constexpr int kVersion = 1;
constexpr size_t kFramingBytes = 8 + 8 + 8;  // magic, header length, checksum
constexpr size_t kBufferBytes = 1 << 20;

// A file descriptor closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// Buffered writes that keep a running checksum of every byte written.
class Writer {
 public:
  Writer(int fd, const std::string& path) : fd_(fd), path_(path) { buffer_.reserve(kBufferBytes); }

  void write(const void* data, size_t bytes) {
    sum.update(data, bytes);
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const size_t n = std::min(bytes, kBufferBytes - buffer_.size());
      buffer_.insert(buffer_.end(), p, p + n);
      p += n;
      bytes -= n;
      if (buffer_.size() == kBufferBytes) flush();
    }
  }

  void flush() {
    const char* p = buffer_.data();
    size_t left = buffer_.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw CheckpointError(io_error(path_, "write"));
      p += n;
      left -= static_cast<size_t>(n);
    }
    buffer_.clear();
  }

  Fnv1a sum;

 private:
  int fd_;
  const std::string& path_;
  std::vector<char> buffer_;
};

// Reads exactly `bytes` at `offset`; false at end of file (errno 0) or on an error.
bool pread_all(int fd, void* data, size_t bytes, uint64_t offset) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::pread(fd, p, bytes, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = 0;
      return false;
    }
    p += n;
    bytes -= static_cast<size_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

}  // namespace

std::string checksum_text(uint64_t checksum) { return fmt::format("{:#018x}", checksum); }

std::string manifest_checksum(nlohmann::json manifest) {
  manifest.erase("manifest_fnv1a64");
  const std::string text = manifest.dump();
  Fnv1a sum;
  sum.update(text.data(), text.size());
  return checksum_text(sum.hash);
}

std::optional<uint64_t> whole_number(const nlohmann::json& value, uint64_t max) {
  const bool whole = value.is_number_unsigned() ||
                     (value.is_number_integer() && value.get<int64_t>() >= 0);
  if (!whole || value.get<uint64_t>() > max) return std::nullopt;
  return value.get<uint64_t>();
}

std::string io_error(const std::string& path, const std::string& what) {
  return "checkpoint '" + path + "': " + what + ": " + std::strerror(errno);
}

void fsync_directory(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.fd < 0) throw CheckpointError(io_error(dir, "open folder to fsync"));
  // Some file systems cannot sync a folder (EINVAL); their renames are as durable as they get.
  if (::fsync(fd.fd) != 0 && errno != EINVAL && errno != EROFS) {
    throw CheckpointError(io_error(dir, "fsync folder"));
  }
}

void write_shard_file(const std::string& path, int rank, int64_t step,
                      const std::vector<StateRun>& runs) {
  nlohmann::json header = {{"format", "plexus-shard"}, {"version", kVersion},
                           {"rank", rank},             {"step", step}};
  std::vector<std::string> sections;
  nlohmann::json table = nlohmann::json::array();
  uint64_t data_bytes = 0;
  for (const StateRun& r : runs) {
    if (r.count == 0) continue;
    auto it = std::find(sections.begin(), sections.end(), r.section);
    if (it == sections.end()) it = sections.insert(sections.end(), r.section);
    table.push_back({it - sections.begin(), r.full_offset, r.count, data_bytes});
    data_bytes += r.count * sizeof(float);
  }
  header["sections"] = sections;
  header["runs"] = std::move(table);
  const std::string text = header.dump();
  const uint64_t header_bytes = text.size();

  if (std::string why = topology::replace_target_problem(path); !why.empty()) {
    throw CheckpointError(why);
  }
  const std::string tmp = path + ".tmp";
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (fd.fd < 0) throw CheckpointError(io_error(tmp, "create"));
    try {
      Writer w(fd.fd, tmp);
      w.write(kMagic, sizeof(kMagic));
      w.write(&header_bytes, sizeof(header_bytes));
      w.write(text.data(), text.size());
      for (const StateRun& r : runs) {
        if (r.count > 0) w.write(r.data, r.count * sizeof(float));
      }
      const uint64_t digest = w.sum.hash;
      w.write(&digest, sizeof(digest));
      w.flush();
      if (::fsync(fd.fd) != 0) throw CheckpointError(io_error(tmp, "fsync"));
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string message = io_error(path, "rename from " + tmp);
    ::unlink(tmp.c_str());
    throw CheckpointError(message);
  }
  fsync_directory(std::filesystem::path(path).parent_path().string());
}

ShardFile read_shard_file(const std::string& checkpoint, const std::string& name) {
  const std::string path = checkpoint + "/" + name;
  auto bad = [&](const std::string& why) {
    return CheckpointError("checkpoint '" + checkpoint + "': " + name + " " + why);
  };
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.fd < 0) {
    if (errno == ENOENT) throw bad("is missing");
    throw CheckpointError(io_error(checkpoint, "open " + name));
  }
  struct stat st {};
  if (::fstat(fd.fd, &st) != 0) throw CheckpointError(io_error(checkpoint, "stat " + name));
  if (!S_ISREG(st.st_mode)) throw bad("is not a regular file");
  ShardFile file;
  file.name = name;
  file.bytes = static_cast<uint64_t>(st.st_size);
  if (file.bytes < kFramingBytes) {
    throw bad(fmt::format("is truncated: {} bytes, less than the {}-byte framing", file.bytes,
                          kFramingBytes));
  }
  char magic[8];
  uint64_t header_bytes = 0;
  if (!pread_all(fd.fd, magic, 8, 0) || !pread_all(fd.fd, &header_bytes, 8, 8)) {
    throw CheckpointError(io_error(checkpoint, "read " + name));
  }
  if (std::memcmp(magic, kMagic, 8) != 0) throw bad("has no PLXSHRD1 magic: corrupt");
  if (header_bytes > file.bytes - kFramingBytes) {
    throw bad(fmt::format("is truncated or corrupt: its header length {} runs past the end of "
                          "its {} bytes",
                          header_bytes, file.bytes));
  }
  // The checksum first: a flipped byte anywhere is reported as corruption, not as what it broke.
  Fnv1a sum;
  std::vector<char> chunk(std::min<uint64_t>(kBufferBytes, file.bytes));
  for (uint64_t at = 0; at < file.bytes - 8;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk.size(), file.bytes - 8 - at));
    if (!pread_all(fd.fd, chunk.data(), n, at)) {
      throw CheckpointError(io_error(checkpoint, "read " + name));
    }
    sum.update(chunk.data(), n);
    at += n;
  }
  if (!pread_all(fd.fd, &file.checksum, 8, file.bytes - 8)) {
    throw CheckpointError(io_error(checkpoint, "read " + name));
  }
  if (sum.hash != file.checksum) {
    throw bad(fmt::format("fails its checksum (stored {}, computed {}): the file is corrupt",
                          checksum_text(file.checksum), checksum_text(sum.hash)));
  }
  std::string text(header_bytes, '\0');
  if (!pread_all(fd.fd, text.data(), text.size(), 16)) {
    throw CheckpointError(io_error(checkpoint, "read " + name));
  }
  const uint64_t data_begin = 16 + header_bytes;
  const uint64_t data_bytes = file.bytes - kFramingBytes - header_bytes;
  if (topology::json_nesting_depth(text) > topology::kMaxJsonDepth) {
    throw bad(fmt::format("has a header that nests arrays or objects deeper than {} levels",
                          topology::kMaxJsonDepth));
  }
  try {
    const nlohmann::json header = nlohmann::json::parse(text);
    if (header.at("format") != "plexus-shard" || header.at("version") != kVersion) {
      throw bad("is not a version " + std::to_string(kVersion) + " plexus-shard file (format " +
                header.at("format").dump() + ", version " + header.at("version").dump() + ")");
    }
    // Integers are refused by name unless whole and in range, never converted.
    const auto integer = [&](const nlohmann::json& value, const std::string& field,
                             uint64_t max) {
      const std::optional<uint64_t> n = whole_number(value, max);
      if (!n) {
        std::string text = value.dump();
        if (text.size() > 80) text = text.substr(0, 80) + "...";
        throw bad(fmt::format("has a malformed header: {} is {}; valid: an integer in 0..{}",
                              field, text, max));
      }
      return *n;
    };
    file.rank = static_cast<int>(integer(header.at("rank"), "rank", INT_MAX));
    file.step = static_cast<int64_t>(integer(header.at("step"), "step", INT64_MAX));
    file.sections = header.at("sections").get<std::vector<std::string>>();
    uint64_t expected_offset = 0;
    for (const nlohmann::json& r : header.at("runs")) {
      ShardRun run;
      run.section = static_cast<int>(integer(r.at(0), "a run's section", INT_MAX));
      run.full_offset = integer(r.at(1), "a run's full_offset", SIZE_MAX);
      run.count = integer(r.at(2), "a run's count", SIZE_MAX);
      const uint64_t offset = integer(r.at(3), "a run's data offset", UINT64_MAX);
      if (run.section >= static_cast<int>(file.sections.size()) ||
          run.count == 0 || offset != expected_offset ||
          run.count > (data_bytes - offset) / sizeof(float)) {
        throw bad("has a malformed run " + r.dump() + " (data is " + std::to_string(data_bytes) +
                  " bytes)");
      }
      run.file_offset_bytes = data_begin + offset;
      expected_offset += run.count * sizeof(float);
      file.runs.push_back(run);
    }
    if (expected_offset != data_bytes) {
      throw bad(fmt::format("holds {} bytes of data but its runs describe {}", data_bytes,
                            expected_offset));
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("has a malformed header: ") + e.what());
  }
  return file;
}

void check_coverage(const std::string& checkpoint, const std::vector<ShardFile>& files,
                    size_t full_params) {
  struct Span {
    size_t begin, end;
    const std::string* file;
  };
  std::map<std::string, std::vector<Span>> sections;
  for (const ShardFile& f : files) {
    for (const ShardRun& r : f.runs) {
      sections[f.sections[r.section]].push_back({r.full_offset, r.full_offset + r.count, &f.name});
    }
  }
  if (sections.empty()) {
    throw CheckpointError("checkpoint '" + checkpoint + "' holds no section at all");
  }
  for (auto& [section, spans] : sections) {
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.begin < b.begin; });
    auto fail = [&, &name = section](const std::string& what) {
      return CheckpointError("checkpoint '" + checkpoint + "': section '" + name + "' " + what +
                             " (the model has " + std::to_string(full_params) + " elements)");
    };
    size_t next = 0;
    const std::string* previous = nullptr;
    for (const Span& s : spans) {
      if (s.end > full_params || s.end < s.begin) {
        throw fail(fmt::format("has elements [{}, {}) of {}, past the end of the model", s.begin,
                               s.end, *s.file));
      }
      if (s.begin > next) {
        throw fail(fmt::format("has a gap: elements [{}, {}) are in no rank file", next, s.begin));
      }
      if (s.begin < next) {
        throw fail(fmt::format("has an overlap: elements [{}, {}) are in both {} and {}", s.begin,
                               std::min(next, s.end), *previous, *s.file));
      }
      next = s.end;
      previous = s.file;
    }
    if (next != full_params) {
      throw fail(fmt::format("has a gap: elements [{}, {}) are in no rank file", next,
                             full_params));
    }
  }
}

}  // namespace plexus::engine
