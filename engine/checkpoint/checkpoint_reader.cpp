// checkpoint_reader.cpp - opening, verifying and reading a sharded checkpoint under any
// placement (CheckpointReader in sharded_checkpoint.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "engine/checkpoint/shard_file.h"
#include "engine/checkpoint/sharded_checkpoint.h"
#include "engine/model/gpt_shard.h"
#include "topology/json_depth.h"

namespace plexus::engine {

namespace {

constexpr int kManifestVersion = 1;

// An int field of the manifest, refused (not wrapped) when it is no integer or out of int range.
int int_field(const std::string& path, const nlohmann::json& object, const char* where,
              const char* name) {
  const nlohmann::json& v = object.at(name);
  if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int>::min() ||
      v.get<int64_t>() > std::numeric_limits<int>::max() ||
      (v.is_number_unsigned() && v.get<uint64_t>() > std::numeric_limits<int>::max())) {
    throw CheckpointError(fmt::format("checkpoint '{}' has a malformed manifest.json: {}{} is {}, "
                                      "not an integer in int range",
                                      path, where, name, v.dump()));
  }
  return v.get<int>();
}

// A non-negative integer field of the manifest up to max, refused (not converted) otherwise.
uint64_t whole_field(const std::string& path, const nlohmann::json& object,
                     const std::string& where, const char* name, uint64_t max) {
  const nlohmann::json& v = object.at(name);
  const std::optional<uint64_t> n = whole_number(v, max);
  if (!n) {
    std::string text = v.dump();
    if (text.size() > 80) text = text.substr(0, 80) + "...";
    throw CheckpointError(fmt::format("checkpoint '{}' has a malformed manifest.json: {}{} is {}, "
                                      "not an integer in 0..{}",
                                      path, where, name, text, max));
  }
  return *n;
}

}  // namespace

CheckpointReader::CheckpointReader(const std::string& path) : path_(path) {
  auto bad = [&](const std::string& why) {  // "checkpoint 'P' is ..." or "checkpoint 'P': ..."
    return CheckpointError("checkpoint '" + path_ + "'" + (why[0] == ':' ? "" : " ") + why);
  };
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec)) throw bad("does not exist");
  if (!std::filesystem::is_directory(path_, ec)) throw bad("is not a directory");
  const std::string manifest_path = path_ + "/manifest.json";
  if (!std::filesystem::exists(manifest_path, ec)) {
    throw bad("has no manifest.json: it is incomplete (a save that did not finish)");
  }
  std::ifstream in(manifest_path, std::ios::binary);
  if (!in) throw CheckpointError(io_error(path_, "open manifest.json"));
  std::stringstream text;
  text << in.rdbuf();
  if (topology::json_nesting_depth(text.view()) > topology::kMaxJsonDepth) {
    throw bad(fmt::format("has a corrupt manifest.json: arrays or objects nest deeper than {} "
                          "levels",
                          topology::kMaxJsonDepth));
  }
  try {
    manifest_ = nlohmann::json::parse(text.view());
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("has a corrupt manifest.json (not valid JSON): ") + e.what());
  }
  if (!manifest_.is_object() || !manifest_.contains("manifest_fnv1a64")) {
    throw bad("has a corrupt manifest.json: no manifest_fnv1a64 checksum");
  }
  if (manifest_["manifest_fnv1a64"] != manifest_checksum(manifest_)) {
    throw bad("has a corrupt manifest.json: it fails its checksum (edited or damaged)");
  }
  try {
    if (manifest_.at("format") != "plexus-sharded-checkpoint" ||
        manifest_.at("version") != kManifestVersion) {
      throw bad("is not a version " + std::to_string(kManifestVersion) +
                " plexus-sharded-checkpoint (format " + manifest_.at("format").dump() +
                ", version " + manifest_.at("version").dump() + ")");
    }
    const std::string dir_name = std::filesystem::path(path_).filename().string();
    if (dir_name.rfind("step-", 0) == 0 && dir_name != fmt::format("step-{:08d}", step())) {
      throw bad(fmt::format("is named {} but its manifest says step {}", dir_name, step()));
    }
    // Every accessor's field, so a malformed one is reported here and never later.
    (void)step(), (void)placement(), (void)training();
    if (const std::string why = model().validate(); !why.empty()) {
      throw bad("has an invalid model in manifest.json: " + why);
    }
    if (world_size() < 1) {
      throw bad(fmt::format("has world_size {} in manifest.json; valid: 1 and up", world_size()));
    }
    full_params_ = whole_field(path_, manifest_, "", "full_num_params", SIZE_MAX);
    if (full_params_ != full_num_params(model())) {
      throw bad(fmt::format("has full_num_params {} but its model has {}", full_params_,
                            full_num_params(model())));
    }
    const nlohmann::json& listed = manifest_.at("files");
    if (static_cast<int>(listed.size()) != world_size()) {
      throw bad(fmt::format("lists {} rank files for world size {}", listed.size(),
                            world_size()));
    }
    for (int r = 0; r < world_size(); ++r) {
      const std::string name = listed.at(r).at("name").get<std::string>();
      const uint64_t bytes =
          whole_field(path_, listed.at(r), fmt::format("files[{}].", r), "bytes", UINT64_MAX);
      const std::string checksum = listed.at(r).at("fnv1a64").get<std::string>();
      if (name != "rank-" + std::to_string(r) + ".bin") {
        throw bad(fmt::format("lists '{}' as the file of rank {}", name, r));
      }
      struct stat st {};
      if (::stat((path_ + "/" + name).c_str(), &st) != 0) {
        if (errno == ENOENT) throw bad(": " + name + " is missing");
        throw CheckpointError(io_error(path_, "stat " + name));
      }
      if (static_cast<uint64_t>(st.st_size) != bytes) {
        throw bad(fmt::format(": {} has {} bytes but the manifest says {}: it is {}", name,
                              st.st_size, bytes,
                              static_cast<uint64_t>(st.st_size) < bytes ? "truncated"
                                                                        : "not the file saved"));
      }
      ShardFile f = read_shard_file(path_, name);
      if (checksum_text(f.checksum) != checksum) {
        throw bad(fmt::format(": {} has checksum {} but the manifest says {}: it is not the file "
                              "saved",
                              name, checksum_text(f.checksum), checksum));
      }
      if (f.rank != r || f.step != step()) {
        throw bad(fmt::format(": {} says rank {} step {}, expected rank {} step {}", name, f.rank,
                              f.step, r, step()));
      }
      files_.push_back(std::move(f));
    }
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("has a malformed manifest.json: ") + e.what());
  }
  check_coverage(path_, files_, full_params_);

  for (size_t f = 0; f < files_.size(); ++f) {
    for (const ShardRun& r : files_[f].runs) {
      const std::string& name = files_[f].sections[r.section];
      auto it = std::find(section_names_.begin(), section_names_.end(), name);
      if (it == section_names_.end()) {
        it = section_names_.insert(section_names_.end(), name);
        pieces_.emplace_back();
      }
      pieces_[it - section_names_.begin()].push_back(
          Piece{r.full_offset, r.count, static_cast<int>(f), r.file_offset_bytes});
    }
  }
  for (auto& p : pieces_) {
    std::sort(p.begin(), p.end(),
              [](const Piece& a, const Piece& b) { return a.full_offset < b.full_offset; });
  }
  for (const ShardFile& f : files_) {
    const int fd = ::open((path_ + "/" + f.name).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      const std::string message = io_error(path_, "open " + f.name);
      for (int open_fd : fds_) ::close(open_fd);  // the destructor does not run
      throw CheckpointError(message);
    }
    fds_.push_back(fd);
  }
}

CheckpointReader::~CheckpointReader() {
  for (int fd : fds_) ::close(fd);
}

int64_t CheckpointReader::step() const {
  return static_cast<int64_t>(whole_field(path_, manifest_, "", "step", INT64_MAX));
}
int CheckpointReader::world_size() const {
  return int_field(path_, manifest_, "", "world_size");
}
const std::string& CheckpointReader::placement() const {
  return manifest_.at("placement").get_ref<const std::string&>();
}
const nlohmann::json& CheckpointReader::training() const { return manifest_.at("training"); }
std::vector<std::string> CheckpointReader::sections() const { return section_names_; }
bool CheckpointReader::has_section(const std::string& section) const {
  return std::find(section_names_.begin(), section_names_.end(), section) !=
         section_names_.end();
}

GptConfig CheckpointReader::model() const {
  const nlohmann::json& m = manifest_.at("model");
  GptConfig c;
  c.vocab_size = int_field(path_, m, "model.", "vocab_size");
  c.max_seq_len = int_field(path_, m, "model.", "max_seq_len");
  c.n_layer = int_field(path_, m, "model.", "n_layer");
  c.n_head = int_field(path_, m, "model.", "n_head");
  c.n_embd = int_field(path_, m, "model.", "n_embd");
  return c;
}

void CheckpointReader::check_model(const GptConfig& config) const {
  const GptConfig saved = model();
  const struct {
    const char* name;
    int saved, now;
  } fields[] = {{"vocab_size", saved.vocab_size, config.vocab_size},
                {"max_seq_len", saved.max_seq_len, config.max_seq_len},
                {"n_layer", saved.n_layer, config.n_layer},
                {"n_head", saved.n_head, config.n_head},
                {"n_embd", saved.n_embd, config.n_embd}};
  for (const auto& f : fields) {
    if (f.saved != f.now) {
      throw CheckpointError(fmt::format("checkpoint {} was saved for {} {}; this run has {} {}",
                                        path_, f.name, f.saved, f.name, f.now));
    }
  }
}

void CheckpointReader::read(const std::vector<StateTarget>& targets) const {
  for (const StateTarget& t : targets) {
    if (t.count == 0) continue;
    if (t.dest == nullptr) {
      throw std::invalid_argument(fmt::format(
          "CheckpointReader::read: target (section '{}', elements [{}, +{})) has no dest",
          t.section, t.full_offset, t.count));
    }
    auto it = std::find(section_names_.begin(), section_names_.end(), t.section);
    if (it == section_names_.end()) {
      std::string have;
      for (const std::string& s : section_names_) have += (have.empty() ? "" : ", ") + s;
      throw CheckpointError(fmt::format("checkpoint '{}' has no section '{}' (it has: {})", path_,
                                        t.section, have));
    }
    if (t.full_offset > full_params_ || t.count > full_params_ - t.full_offset) {
      throw CheckpointError(fmt::format(
          "checkpoint '{}': elements [{}, {}) of section '{}' are outside the model's [0, {})",
          path_, t.full_offset, t.full_offset + t.count, t.section, full_params_));
    }
    const std::vector<Piece>& pieces = pieces_[it - section_names_.begin()];
    // The last piece starting at or before the target's first element (the pieces tile).
    auto p = std::upper_bound(pieces.begin(), pieces.end(), t.full_offset,
                              [](size_t value, const Piece& q) { return value < q.full_offset; });
    --p;
    size_t at = t.full_offset;
    const size_t end = t.full_offset + t.count;
    for (; at < end; ++p) {
      const size_t skip = at - p->full_offset;
      const size_t n = std::min(p->count - skip, end - at);
      char* dest = reinterpret_cast<char*>(t.dest + (at - t.full_offset));
      size_t left = n * sizeof(float);
      uint64_t offset = p->file_offset_bytes + skip * sizeof(float);
      while (left > 0) {
        const ssize_t got = ::pread(fds_[p->file], dest, left, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) {
          if (got == 0) errno = EIO;
          throw CheckpointError(io_error(path_, "read " + files_[p->file].name));
        }
        dest += got;
        left -= static_cast<size_t>(got);
        offset += static_cast<uint64_t>(got);
      }
      at += n;
    }
  }
}

}  // namespace plexus::engine
