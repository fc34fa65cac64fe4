#include "engine/train/size_limits.h"

#include <unistd.h>

#include <algorithm>
#include <climits>

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

uint64_t host_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace plexus::engine
