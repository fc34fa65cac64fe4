// sharded_checkpoint.cpp - saving a sharded checkpoint (every rank's file, then rank 0's
// manifest and the rename that completes it) and finding the newest complete one
// (sharded_checkpoint.h). Reading: checkpoint_reader.cpp.
#include "engine/checkpoint/sharded_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "topology/output_path.h"
#include "topology/writable_folder.h"

#include "engine/checkpoint/shard_file.h"
#include "engine/model/gpt_shard.h"

namespace plexus::engine {

namespace fs = std::filesystem;

namespace {

constexpr int kManifestVersion = 1;

void check_location(const char* function, const std::string& dir, int64_t step) {
  if (dir.empty()) throw std::invalid_argument(std::string(function) + ": dir is empty");
  if (step < 0) {
    throw std::invalid_argument(fmt::format("{}: step {} is negative (valid: 0 and up)", function,
                                            step));
  }
}

bool is_complete(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(path) / "manifest.json", ec);
}

nlohmann::json model_json(const GptConfig& c) {
  return {{"vocab_size", c.vocab_size}, {"max_seq_len", c.max_seq_len}, {"n_layer", c.n_layer},
          {"n_head", c.n_head},         {"n_embd", c.n_embd}};
}

// Gpt's tensor table: the names and shapes the flat offsets stand for.
nlohmann::json tensor_table(const GptConfig& c) {
  nlohmann::json tensors = nlohmann::json::array();
  for (const ShardTensor& t : shard_tensors(c, ShardSpec{0, c.n_layer, true, true, 1, 0})) {
    tensors.push_back({{"name", t.name}, {"offset", t.full_offset}, {"shape", t.full_shape}});
  }
  return tensors;
}

void write_text_file(const std::string& path, const std::string& text) {
  if (std::string why = topology::replace_target_problem(path); !why.empty()) {
    throw CheckpointError(why);
  }
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CheckpointError(io_error(tmp, "create"));
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const std::string message = io_error(tmp, "write");
      ::close(fd);
      ::unlink(tmp.c_str());
      throw CheckpointError(message);
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  const std::string sync_error = synced ? "" : io_error(tmp, "fsync");
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string message = synced ? io_error(path, "rename from " + tmp) : sync_error;
    ::unlink(tmp.c_str());
    throw CheckpointError(message);
  }
}

}  // namespace

std::vector<StateRun> state_runs(const std::string& section, const std::vector<FullRun>& runs,
                                 const float* base, size_t base_offset) {
  std::vector<StateRun> out;
  out.reserve(runs.size());
  for (const FullRun& r : runs) {
    if (r.local_offset < base_offset) {
      throw std::invalid_argument(fmt::format(
          "state_runs: run at local element {} is before base_offset {} (clip the runs first)",
          r.local_offset, base_offset));
    }
    out.push_back({section, r.full_offset, r.count, base + (r.local_offset - base_offset)});
  }
  return out;
}

std::vector<StateTarget> state_targets(const std::string& section,
                                       const std::vector<FullRun>& runs, float* base,
                                       size_t base_offset) {
  std::vector<StateTarget> out;
  out.reserve(runs.size());
  for (const FullRun& r : runs) {
    if (r.local_offset < base_offset) {
      throw std::invalid_argument(fmt::format(
          "state_targets: run at local element {} is before base_offset {} (clip the runs first)",
          r.local_offset, base_offset));
    }
    out.push_back({section, r.full_offset, r.count, base + (r.local_offset - base_offset)});
  }
  return out;
}

void check_checkpoint_folder(const std::string& dir) {
  if (dir.empty()) throw std::invalid_argument("check_checkpoint_folder: dir is empty");
  std::error_code ec;
  const fs::file_type type = fs::status(dir, ec).type();
  if (type != fs::file_type::not_found && type != fs::file_type::directory && !ec) {
    throw CheckpointError("checkpoint folder '" + dir + "' exists and is not a directory");
  }
  fs::create_directories(dir, ec);
  std::error_code ignored;  // another rank may have created it at the same moment
  if (ec && !fs::is_directory(dir, ignored)) {
    throw CheckpointError("checkpoint folder '" + dir + "': cannot create it: " + ec.message());
  }
  if (const std::string why = topology::writable_folder_problem(dir); !why.empty()) {
    throw CheckpointError("checkpoint " + why);
  }
}

void prepare_checkpoint_step(const std::string& dir, int64_t step, const std::string& job) {
  check_location("prepare_checkpoint_step", dir, step);
  const std::string final_path = checkpoint_path(dir, step);
  const std::string tmp_dir = checkpoint_tmp_path(dir, step, job);
  if (is_complete(final_path)) {
    throw CheckpointError("checkpoint '" + final_path + "' is already complete; not writing it "
                          "again");
  }
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::error_code ignored;
  if (ec && !fs::is_directory(dir, ignored)) {
    throw CheckpointError("checkpoint '" + dir + "': create folder: " + ec.message());
  }
  for (const std::string& stale : {tmp_dir, final_path}) {
    if (fs::symlink_status(stale, ec).type() == fs::file_type::not_found) continue;
    if (stale == final_path && !fs::is_directory(fs::symlink_status(stale, ec))) {
      throw CheckpointError("checkpoint '" + final_path + "' exists and is not a folder; move "
                            "it away to save step " + std::to_string(step));
    }
    fs::remove_all(stale, ec);
    if (ec) {
      throw CheckpointError("checkpoint '" + stale + "': remove what an interrupted save left: " +
                            ec.message());
    }
  }
  if (::mkdir(tmp_dir.c_str(), 0755) != 0) {
    throw CheckpointError(io_error(tmp_dir, "create folder"));
  }
  fsync_directory(dir);
}

std::string checkpoint_path(const std::string& dir, int64_t step) {
  return fmt::format("{}/step-{:08d}", dir, step);
}

std::string checkpoint_tmp_path(const std::string& dir, int64_t step, const std::string& job) {
  return checkpoint_path(dir, step) + (job.empty() ? ".tmp" : ".tmp-" + job);
}

void write_rank_shard(const std::string& dir, int64_t step, int rank,
                      const std::vector<StateRun>& runs, const std::string& job) {
  check_location("write_rank_shard", dir, step);
  if (rank < 0) {
    throw std::invalid_argument(fmt::format("write_rank_shard: rank {} is negative", rank));
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].count > 0 && (runs[i].data == nullptr || runs[i].section.empty())) {
      throw std::invalid_argument(fmt::format(
          "write_rank_shard: rank {}: run {} (section '{}', {} elements) has {}", rank, i,
          runs[i].section, runs[i].count, runs[i].data == nullptr ? "no data" : "no section"));
    }
  }
  const std::string final_path = checkpoint_path(dir, step);
  if (is_complete(final_path)) {
    throw CheckpointError("checkpoint '" + final_path + "' is already complete; not writing it "
                          "again");
  }
  const std::string tmp_dir = checkpoint_tmp_path(dir, step, job);
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::error_code ignored;  // another rank may have created it at the same moment
  if (ec && !fs::is_directory(dir, ignored)) {
    throw CheckpointError("checkpoint '" + dir + "': create folder: " + ec.message());
  }
  if (::mkdir(tmp_dir.c_str(), 0755) != 0 && errno != EEXIST) {
    throw CheckpointError(io_error(tmp_dir, "create folder"));
  }
  write_shard_file(tmp_dir + "/rank-" + std::to_string(rank) + ".bin", rank, step, runs);
}

std::string finalize_checkpoint(const std::string& dir, int64_t step, int world_size,
                                const GptConfig& model, const std::string& placement,
                                const nlohmann::json& training, const std::string& job) {
  check_location("finalize_checkpoint", dir, step);
  if (world_size < 1) {
    throw std::invalid_argument(
        fmt::format("finalize_checkpoint: world_size {} not in 1..", world_size));
  }
  if (std::string why = model.validate(); !why.empty()) {
    throw std::invalid_argument("finalize_checkpoint: " + why);
  }
  const std::string final_path = checkpoint_path(dir, step);
  const std::string tmp_dir = checkpoint_tmp_path(dir, step, job);
  if (is_complete(final_path)) {
    throw CheckpointError("checkpoint '" + final_path + "' is already complete");
  }
  std::vector<ShardFile> files;
  nlohmann::json listed = nlohmann::json::array();
  std::vector<std::string> sections;
  for (int r = 0; r < world_size; ++r) {
    ShardFile f = read_shard_file(tmp_dir, "rank-" + std::to_string(r) + ".bin");
    if (f.rank != r || f.step != step) {
      throw CheckpointError(fmt::format("checkpoint '{}': {} says rank {} step {}, expected rank "
                                        "{} step {}",
                                        tmp_dir, f.name, f.rank, f.step, r, step));
    }
    for (const std::string& s : f.sections) {
      if (std::find(sections.begin(), sections.end(), s) == sections.end()) sections.push_back(s);
    }
    listed.push_back(
        {{"name", f.name}, {"bytes", f.bytes}, {"fnv1a64", checksum_text(f.checksum)}});
    files.push_back(std::move(f));
  }
  check_coverage(tmp_dir, files, full_num_params(model));
  std::error_code list_ec;
  for (fs::directory_iterator it(tmp_dir, list_ec), end; !list_ec && it != end;
       it.increment(list_ec)) {
    const std::string name = it->path().filename().string();
    bool expected = false;
    for (const ShardFile& f : files) expected |= name == f.name;
    if (!expected) {
      throw CheckpointError(fmt::format("checkpoint '{}': holds '{}', which is no rank file of a "
                                        "world of {} (left by another save?); not completing it",
                                        tmp_dir, name, world_size));
    }
  }
  if (list_ec) throw CheckpointError("checkpoint '" + tmp_dir + "': list: " + list_ec.message());

  nlohmann::json manifest = {{"format", "plexus-sharded-checkpoint"},
                             {"version", kManifestVersion},
                             {"step", step},
                             {"world_size", world_size},
                             {"placement", placement},
                             {"model", model_json(model)},
                             {"full_num_params", full_num_params(model)},
                             {"tensors", tensor_table(model)},
                             {"sections", sections},
                             {"files", listed},
                             {"training", training}};
  manifest["manifest_fnv1a64"] = manifest_checksum(manifest);
  write_text_file(tmp_dir + "/manifest.json", manifest.dump(1) + "\n");
  fsync_directory(tmp_dir);
  if (::rename(tmp_dir.c_str(), final_path.c_str()) != 0) {
    throw CheckpointError(io_error(final_path, "rename from " + tmp_dir));
  }
  fsync_directory(dir);
  return final_path;
}

std::vector<CompleteCheckpoint> complete_checkpoints(const std::string& dir) {
  std::error_code ec;
  const fs::file_status st = fs::status(dir, ec);
  if (st.type() == fs::file_type::not_found) return {};
  if (ec) throw CheckpointError("checkpoint folder '" + dir + "': " + ec.message());
  if (st.type() != fs::file_type::directory) {
    throw CheckpointError("checkpoint folder '" + dir + "' exists and is not a directory");
  }
  std::vector<CompleteCheckpoint> found;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= 5 || name.compare(0, 5, "step-") != 0) continue;  // also skips *.tmp*:
    int64_t step = -1;                                                   // not all digits
    const char* first = name.data() + 5;
    const char* last = name.data() + name.size();
    const auto [ptr, parse_ec] = std::from_chars(first, last, step);
    if (parse_ec != std::errc() || ptr != last || step < 0) continue;
    // A folder whose manifest cannot be looked for (permissions, I/O) is an error, not an
    // incomplete checkpoint: resuming from an older one would later overwrite it.
    struct stat st {};
    const std::string manifest = it->path().string() + "/manifest.json";
    if (::stat(manifest.c_str(), &st) != 0) {
      if (errno == ENOENT || errno == ENOTDIR) continue;  // incomplete, or not a folder
      throw CheckpointError(io_error(it->path().string(), "look for manifest.json") +
                            " (fix its permissions or move it away)");
    }
    if (!S_ISREG(st.st_mode)) continue;
    found.push_back({step, dir + "/" + name});
  }
  if (ec) throw CheckpointError("checkpoint folder '" + dir + "': list: " + ec.message());
  std::sort(found.begin(), found.end(),
            [](const CompleteCheckpoint& a, const CompleteCheckpoint& b) { return a.step > b.step; });
  return found;
}

std::optional<std::string> newest_complete_checkpoint(const std::string& dir) {
  const std::vector<CompleteCheckpoint> all = complete_checkpoints(dir);
  if (all.empty()) return std::nullopt;
  return all.front().path;
}

std::vector<std::string> leftover_saves(const std::string& dir, const std::string& job) {
  std::vector<std::string> names;
  std::error_code ec;
  const std::string own = job.empty() ? ".tmp" : ".tmp-" + job;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const size_t tmp = name.find(".tmp");
    if (name.rfind("step-", 0) != 0 || tmp == std::string::npos) continue;
    if (name.compare(tmp, std::string::npos, own) == 0) continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace plexus::engine
