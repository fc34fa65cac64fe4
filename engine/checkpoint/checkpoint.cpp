#include "engine/checkpoint/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <string>
#include <string_view>

#include "engine/checkpoint/fnv1a.h"
#include "topology/json_depth.h"
#include "topology/output_path.h"

namespace plexus::engine {

namespace {

constexpr char kMagic[8] = {'P', 'L', 'X', 'C', 'K', 'P', 'T', '1'};

}  // namespace

CheckpointError header_field_error(const std::string& path, const std::string& field,
                                   const nlohmann::json& value, const std::string& valid) {
  std::string text = value.dump();
  if (text.size() > 80) text = text.substr(0, 80) + "...";
  return CheckpointError("checkpoint '" + path + "': header field " + field + " is " + text +
                         "; valid: " + valid);
}

namespace {

std::string os_error(const std::string& what, const std::string& path) {
  return "checkpoint '" + path + "': " + what + ": " + std::strerror(errno);
}

void write_all(int fd, const void* data, size_t bytes, Fnv1a& sum, const std::string& path) {
  sum.update(data, bytes);
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::write(fd, p, bytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw CheckpointError(os_error("write", path));
    p += n;
    bytes -= static_cast<size_t>(n);
  }
}

}  // namespace

const std::vector<float>* Checkpoint::find(const std::string& name) const {
  for (const auto& s : sections) {
    if (s.name == name) return &s.data;
  }
  return nullptr;
}

void save_checkpoint(const std::string& requested, const Checkpoint& checkpoint) {
  namespace fs = std::filesystem;
  // Through a symbolic link, write (atomically) where it points, not over the link.
  std::error_code link_ec;
  const bool is_link = fs::symlink_status(requested, link_ec).type() == fs::file_type::symlink;
  const std::string path =
      is_link ? fs::weakly_canonical(requested, link_ec).string() : requested;
  if (is_link && link_ec) {
    throw CheckpointError("checkpoint '" + requested + "': " + link_ec.message());
  }
  if (std::string why = topology::replace_target_problem(path); !why.empty()) {
    throw CheckpointError("checkpoint " + why);
  }
  fs::path target(path);
  if (target.has_parent_path()) {
    std::error_code ec;
    fs::create_directories(target.parent_path(), ec);
    if (ec) throw CheckpointError("checkpoint '" + path + "': create folder: " + ec.message());
  }
  nlohmann::json header = checkpoint.header;
  header["sections"] = nlohmann::json::array();
  for (const auto& s : checkpoint.sections) {
    header["sections"].push_back({{"name", s.name}, {"count", s.data.size()}});
  }
  const std::string text = header.dump();
  const uint64_t header_bytes = text.size();

  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CheckpointError(os_error("open " + tmp, path));
  try {
    Fnv1a sum;
    write_all(fd, kMagic, sizeof(kMagic), sum, path);
    write_all(fd, &header_bytes, sizeof(header_bytes), sum, path);
    write_all(fd, text.data(), text.size(), sum, path);
    for (const auto& s : checkpoint.sections) {
      write_all(fd, s.data.data(), s.data.size() * sizeof(float), sum, path);
    }
    Fnv1a ignored;
    uint64_t digest = sum.hash;
    write_all(fd, &digest, sizeof(digest), ignored, path);
    if (::fsync(fd) != 0) throw CheckpointError(os_error("fsync", path));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw CheckpointError(os_error("rename", path));
  }
  std::string dir = target.has_parent_path() ? target.parent_path().string() : ".";
  if (int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

Checkpoint load_checkpoint(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec)) {
    throw CheckpointError("checkpoint '" + path +
                          "' is not a regular file (a directory, device or FIFO)");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CheckpointError(os_error("open", path));
  auto corrupt = [&](const std::string& why) {
    return CheckpointError("checkpoint '" + path + "' is corrupt or incomplete: " + why);
  };
  // The whole file at once, its size known first: one allocation, refused by name if too big.
  const uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  if (ec) throw CheckpointError("checkpoint '" + path + "': size: " + ec.message());
  std::vector<char> bytes;
  try {
    bytes.resize(static_cast<size_t>(file_bytes));
  } catch (const std::bad_alloc&) {
    throw CheckpointError("checkpoint '" + path + "': its " + std::to_string(file_bytes) +
                          " bytes do not fit in this process's memory");
  }
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size())) ||
      in.peek() != std::ifstream::traits_type::eof()) {
    throw corrupt("it changed size while being read");
  }
  if (bytes.size() < sizeof(kMagic) + 16 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    throw corrupt("no PLXCKPT1 magic");
  }
  uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  Fnv1a sum;
  sum.update(bytes.data(), bytes.size() - 8);
  if (sum.hash != stored) throw corrupt("checksum mismatch");
  uint64_t header_bytes = 0;
  std::memcpy(&header_bytes, bytes.data() + 8, 8);
  if (header_bytes > bytes.size() - 24) throw corrupt("header length past the end of the file");
  Checkpoint ck;
  const std::string_view header_text(reinterpret_cast<const char*>(bytes.data()) + 16,
                                     header_bytes);
  if (topology::json_nesting_depth(header_text) > topology::kMaxJsonDepth) {
    throw corrupt("header nests arrays or objects deeper than " +
                  std::to_string(topology::kMaxJsonDepth) + " levels");
  }
  try {
    ck.header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {
    throw corrupt(std::string("header is not JSON: ") + e.what());
  }
  // The checksum holds, so anything wrong below was written so (crafted): named field by field.
  auto bad_field = [&](const std::string& field, const nlohmann::json& value,
                       const std::string& valid) {
    return header_field_error(path, field, value, valid);
  };
  if (!ck.header.is_object()) throw bad_field("(header)", ck.header, "a JSON object");
  const nlohmann::json sections =
      ck.header.contains("sections") ? ck.header.at("sections") : nlohmann::json();
  if (!sections.is_array()) throw bad_field("sections", sections, "an array of {name, count}");
  const size_t data_bytes = bytes.size() - 8;
  size_t offset = 16 + header_bytes;
  for (size_t i = 0; i < sections.size(); ++i) {
    const nlohmann::json& s = sections.at(i);
    const std::string where = "sections[" + std::to_string(i) + "]";
    if (!s.is_object() || !s.contains("name") || !s.at("name").is_string()) {
      throw bad_field(where, s, "an object with a string name and a count");
    }
    const nlohmann::json& count_json = s.contains("count") ? s.at("count") : nlohmann::json();
    const std::string name = s.at("name").get<std::string>();
    const size_t left = (data_bytes - offset) / sizeof(float);
    if (!count_json.is_number_unsigned() && !(count_json.is_number_integer() &&
                                               count_json.get<int64_t>() >= 0)) {
      throw bad_field(where + ".count", count_json, "an integer >= 0");
    }
    const uint64_t count = count_json.get<uint64_t>();
    if (count > left) {
      throw corrupt("section '" + name + "' (" + where + ".count " + std::to_string(count) +
                    " floats) past the end of the file (" + std::to_string(left) +
                    " floats left)");
    }
    CheckpointSection section{name, std::vector<float>(count)};
    if (count > 0) std::memcpy(section.data.data(), bytes.data() + offset, count * sizeof(float));
    offset += count * sizeof(float);
    ck.sections.push_back(std::move(section));
  }
  if (offset != data_bytes) throw corrupt("trailing bytes after the last section");
  return ck;
}

}  // namespace plexus::engine
