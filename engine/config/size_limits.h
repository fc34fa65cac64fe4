// size_limits.h - plexus-train's sizes, checked before anything is allocated or partitioned, so
// an oversized option is refused at once (exit 2) with a message naming the options and the
// sizes, never a std::bad_alloc or an overflow after minutes of set-up.
//
// check_model_sizes: --n-layer, --n-head, --n-embd and --seq-len each in 1..2^20 (GptConfig's
// range), --n-embd a multiple of --n-head, the pipeline chunks (P x --virtual-stages) at most
// --n-layer, and a microbatch's tokens (its rows x --seq-len) at most 2^31-1 (the layers count
// rows in int).
//
// check_memory_floor: a lower bound of what the ranks on this host must hold, against the
// host's memory. Per rank, at least:
//   model state   16 bytes per parameter (fp32 parameters and gradients, AdamW's two moments),
//                 spread evenly over all ranks (ZeRO-3's best case);
//   activations   one microbatch through one block: the residual stream (rows, T, C) and the
//                 attention scores (rows, heads / tensor degree, T, T), 4 bytes each;
//   batch         this rank's tokens and targets (rows x T, 4 bytes each);
//   data          the data file, which every rank reads whole.
// It can only refuse a run that could not fit; anything it misses and the allocator refuses is
// still reported by the trainer naming the stage and these sizes. With --device cuda the model
// state and the activations are managed memory that the GPUs' memory backs as well, so only the
// batch and the data are compared with the host's memory there.
#pragma once

#include <cstdint>
#include <string>

#include "engine/config/options.h"

namespace plexus::engine {

// "" or the message, e.g. "--n-layer 2000000 not in 1..1048576". The batch must already split
// evenly over the data-parallel degree and the microbatches.
std::string check_model_sizes(const TrainOptions& o, int pipeline_degree, int data_degree);

struct MemoryFloor {  // bytes, each at least what one rank holds
  double parameters = 0;  // the full model's parameter count
  double model_state = 0;
  double activations = 0;
  double batch = 0;
  double data = 0;
  double total() const { return model_state + activations + batch + data; }
};

// The floor of one rank (see above). The options must have passed check_model_sizes and the
// batch divisibility checks.
MemoryFloor memory_floor(const TrainOptions& o, int world_size, int data_degree,
                         int tensor_degree, uint64_t data_file_bytes);

// "" if local_ranks x the floor fits in host_bytes; otherwise the message naming the options of
// the largest part and every part's size, e.g. "--n-layer 1000000 --n-embd 128: the model's
// 198.3 billion parameters take 2.89 TiB with their gradients and AdamW's two moments (16
// bytes each), 2.89 TiB per rank even spread over all 1 ranks; this host's 1 rank needs at
// least 2.89 TiB, more than its 22.9 GiB of memory ...".
std::string check_memory_floor(const TrainOptions& o, const MemoryFloor& floor, int world_size,
                               int local_ranks, uint64_t host_bytes);

// The memory this process may use: the host's physical memory (sysconf), or less where its
// memory cgroup (a container, a Slurm job) has a lower limit; 0 if unknown.
uint64_t host_memory_bytes();

// The memory limit of the cgroup that `proc_self_cgroup` (the text of /proc/self/cgroup) names,
// read below `cgroup_root` (/sys/fs/cgroup): v2's memory.max, else v1's
// memory/<path>/memory.limit_in_bytes, each tried at the process's path and then at the root (a
// cgroup namespace shows "/"). 0 when there is none ("max"), it cannot be read or is not a whole
// number. Both inputs come from the system: read strictly, never trusted to be well formed.
uint64_t cgroup_memory_limit(const std::string& proc_self_cgroup, const std::string& cgroup_root);

}  // namespace plexus::engine
