#include "engine/config/size_limits.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <fmt/format.h>

#include "engine/memory/memory_tracker.h"
#include "engine/model/gpt.h"
#include "engine/model/gpt_shard.h"

namespace plexus::engine {

namespace {

constexpr double kStateBytesPerParameter = 16;  // fp32 parameter, gradient, AdamW m and v

int microbatch_rows(const TrainOptions& o, int data_degree) {
  return o.global_batch / data_degree / o.microbatches;
}

// "198.3 billion" / "12.6 million" / "812345".
std::string count_text(double n) {
  if (n >= 1e9) return fmt::format("{:.1f} billion", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.1f} million", n / 1e6);
  return fmt::format("{:.0f}", n);
}

}  // namespace

std::string check_model_sizes(const TrainOptions& o, int pipeline_degree, int data_degree) {
  const struct {
    const char* option;
    int value;
  } dims[] = {{"--n-layer", o.model.n_layer},
              {"--n-head", o.model.n_head},
              {"--n-embd", o.model.n_embd},
              {"--seq-len", o.model.seq_len}};
  for (const auto& d : dims) {
    if (d.value < 1 || d.value > GptConfig::kMaxDim) {
      return fmt::format("{} {} not in 1..{}", d.option, d.value, GptConfig::kMaxDim);
    }
  }
  if (o.model.n_embd % o.model.n_head != 0) {
    return fmt::format("--n-embd {} is not a multiple of --n-head {}", o.model.n_embd,
                       o.model.n_head);
  }
  const int64_t chunks = static_cast<int64_t>(pipeline_degree) * o.virtual_stages;
  if (chunks > o.model.n_layer) {
    return fmt::format("layers fewer than stages: {} transformer blocks cannot fill {} pipeline "
                       "chunks (pipeline degree x virtual stages); each chunk needs at least one "
                       "block (--n-layer {}, pipeline degree {}, --virtual-stages {})",
                       o.model.n_layer, chunks, o.model.n_layer, pipeline_degree,
                       o.virtual_stages);
  }
  const int64_t tokens = static_cast<int64_t>(microbatch_rows(o, data_degree)) * o.model.seq_len;
  if (tokens > INT_MAX) {
    return fmt::format("--batch-size {} --microbatches {} --seq-len {}: a microbatch of {} rows x "
                       "{} tokens = {} tokens per rank, more than the layers' {} (raise "
                       "--microbatches or lower --batch-size)",
                       o.global_batch, o.microbatches, o.model.seq_len,
                       microbatch_rows(o, data_degree), o.model.seq_len, tokens, INT_MAX);
  }
  return "";
}

MemoryFloor memory_floor(const TrainOptions& o, int world_size, int data_degree,
                         int tensor_degree, uint64_t data_file_bytes) {
  GptConfig c;
  c.max_seq_len = o.model.seq_len;
  c.n_layer = o.model.n_layer;
  c.n_head = o.model.n_head;
  c.n_embd = o.model.n_embd;
  const double T = o.model.seq_len, C = o.model.n_embd;
  const double heads = std::max(1, o.model.n_head / std::max(1, tensor_degree));
  const double micro = microbatch_rows(o, data_degree);
  const double rows = static_cast<double>(o.global_batch) / data_degree;
  MemoryFloor f;
  f.parameters = static_cast<double>(full_num_params(c));
  f.model_state = kStateBytesPerParameter * f.parameters / std::max(1, world_size);
  f.activations = 4.0 * micro * T * (C + heads * T);
  f.batch = 2 * 4.0 * rows * T;
  f.data = static_cast<double>(data_file_bytes);
  return f;
}

std::string check_memory_floor(const TrainOptions& o, const MemoryFloor& f, int world_size,
                               int local_ranks, uint64_t host_bytes) {
  const bool cuda = o.device == ComputeDevice::kCuda;
  const double per_rank = cuda ? f.batch + f.data : f.total();
  const double needed = per_rank * std::max(1, local_ranks);
  if (host_bytes == 0 || needed <= static_cast<double>(host_bytes)) return "";
  std::string lead;
  const double biggest = std::max({cuda ? 0 : f.model_state, cuda ? 0 : f.activations, f.batch,
                                   f.data});
  if (biggest == f.model_state && !cuda) {
    lead = fmt::format("--n-layer {} --n-embd {}: the model's {} parameters take {} with their "
                       "gradients and AdamW's two moments (16 bytes each)",
                       o.model.n_layer, o.model.n_embd, count_text(f.parameters),
                       format_bytes(kStateBytesPerParameter * f.parameters));
    if (world_size > 1) {
      lead += fmt::format(", {} per rank even spread over all {} ranks",
                          format_bytes(f.model_state), world_size);
    }
  } else if (biggest == f.activations && !cuda) {
    lead = fmt::format("--batch-size {} --microbatches {} --seq-len {}: a microbatch's activations "
                       "through one block (residual stream and attention scores) take {} per "
                       "rank",
                       o.global_batch, o.microbatches, o.model.seq_len,
                       format_bytes(f.activations));
  } else if (biggest == f.batch) {
    lead = fmt::format("--batch-size {} --seq-len {}: the batch's tokens and targets take {} per "
                       "rank",
                       o.global_batch, o.model.seq_len, format_bytes(f.batch));
  } else {
    lead = fmt::format("--data '{}': every rank reads the file's {} whole", o.data_path,
                       format_bytes(f.data));
  }
  return fmt::format("{}; this host's {} {} at least {}, more than its {} of memory (per rank "
                     "at least: model state {}, activations {}, batch {}, data {}{})",
                     lead, local_ranks, local_ranks == 1 ? "rank needs" : "ranks need",
                     format_bytes(needed), format_bytes(static_cast<double>(host_bytes)),
                     format_bytes(f.model_state), format_bytes(f.activations),
                     format_bytes(f.batch), format_bytes(f.data),
                     cuda ? "; on cuda only the batch and data count against host memory" : "");
}

namespace {

// The whole number a cgroup file holds (one line), 0 for "max", absent or malformed.
uint64_t limit_in(const std::string& path) {
  std::ifstream in(path);
  std::string text;
  if (!in || !std::getline(in, text) || text.size() > 24) return 0;
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return 0;
  return value;
}

}  // namespace

uint64_t cgroup_memory_limit(const std::string& proc_self_cgroup, const std::string& cgroup_root) {
  std::istringstream lines(proc_self_cgroup);
  std::string v2_path, v1_path;
  bool v2 = false, v1 = false;
  for (std::string line; std::getline(lines, line);) {
    // "hierarchy-id:controllers:path"; the path may itself hold colons.
    const size_t first = line.find(':');
    const size_t second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos) continue;
    const std::string id = line.substr(0, first);
    const std::string controllers = line.substr(first + 1, second - first - 1);
    const std::string path = line.substr(second + 1);
    if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) continue;
    if (id == "0" && controllers.empty()) {
      v2 = true;
      v2_path = path;
    }
    std::istringstream names(controllers);
    for (std::string name; std::getline(names, name, ',');) {
      if (name == "memory") {
        v1 = true;
        v1_path = path;
      }
    }
  }
  for (const std::string& file :
       {v1 ? cgroup_root + "/memory" + v1_path + "/memory.limit_in_bytes" : std::string(),
        v1 ? cgroup_root + "/memory/memory.limit_in_bytes" : std::string(),
        v2 ? cgroup_root + v2_path + "/memory.max" : std::string(),
        v2 ? cgroup_root + "/memory.max" : std::string()}) {
    if (file.empty()) continue;
    if (std::error_code ec; !std::filesystem::exists(file, ec)) continue;
    return limit_in(file);  // the first that exists decides, "max" included
  }
  return 0;
}

uint64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  uint64_t bytes = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
  std::ifstream in("/proc/self/cgroup");
  std::string text(1 << 16, '\0');  // far more than any process's list of cgroups
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  // v1 writes "no limit" as a page-rounded 2^63-1, far above any host: min() leaves it out.
  const uint64_t limit = cgroup_memory_limit(text, "/sys/fs/cgroup");
  if (limit > 0) bytes = std::min(bytes, limit);
  return bytes;
}

}  // namespace plexus::engine
