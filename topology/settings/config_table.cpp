// config_table.cpp - the PLEXUS_* variable table (see config_table.h).
#include "topology/settings/config_table.h"

#include <fmt/format.h>

namespace plexus {

namespace {

// clang-format off
constexpr ConfigVariable kVariables[] = {
  {"PLEXUS_RANK", ConfigType::Integer, "",
   "Rank of this process in the world communicator (plx_comm_init_from_env). When unset, "
   "RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID are tried in that order."},
  {"PLEXUS_WORLD_SIZE", ConfigType::Integer, "",
   "Number of ranks in the world communicator. Falls back to WORLD_SIZE, "
   "OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS (same family as the rank)."},
  {"PLEXUS_LOCAL_RANK", ConfigType::Integer, "",
   "Index of this process among the ranks on its host. Falls back to LOCAL_RANK, "
   "OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID; else computed from host ids."},
  {"PLEXUS_LOCAL_WORLD_SIZE", ConfigType::Integer, "",
   "Number of ranks on this host. Falls back to LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_SIZE, "
   "MPI_LOCALNRANKS; else computed from host ids."},
  {"PLEXUS_MASTER_ADDR", ConfigType::String, "",
   "Address of the rendezvous server (rank 0 listens there). Falls back to MASTER_ADDR, then "
   "127.0.0.1. plx_get_unique_id listens on it when set."},
  {"PLEXUS_MASTER_PORT", ConfigType::Integer, "",
   "TCP port of the rendezvous server. Falls back to MASTER_PORT, then 29500 "
   "(plx_get_unique_id: a port chosen by the kernel)."},
  {"PLEXUS_RENDEZVOUS_FD", ConfigType::Integer, "",
   "Set by plexus-run for rank 0 only: an inherited descriptor listening on "
   "PLEXUS_MASTER_PORT, which the rendezvous server uses instead of binding the port (no other "
   "process can take the port between the launcher's choice and rank 0's start). Used only if "
   "it is a listening TCP socket on that port; else a warning and the port is bound as usual."},
  {"PLEXUS_JOB_TOKEN", ConfigType::String, "",
   "Secret of the job (16..1024 bytes), the same on every rank: a rank must prove it (an "
   "HMAC-SHA256 over the server's challenge, never the token itself) before the rendezvous "
   "admits it. plexus-run sets a random one. Unset: a key derived from the launcher's job id "
   "(torchrun, Open MPI, PMIx, Slurm), which keeps jobs apart but is no secret; see "
   "docs/security.md."},
  {"PLEXUS_TRANSPORT", ConfigType::String, "ofi",
   "Transport of the communicators: \"ofi\" (libfabric; PLEXUS_FI_PROVIDER picks the provider) "
   "or \"ucx\" (UCX; its own UCX_TLS and UCX_NET_DEVICES apply). Every rank must use the same."},
  {"PLEXUS_CHECK_ARGS", ConfigType::Integer, "1",
   "1: every collective first compares a 32-byte signature of its arguments across the ranks "
   "(ceil(log2 n) rounds of 72-byte messages) and returns PLX_ERROR_MISMATCH on every rank if "
   "they differ. "
   "0: skip the check (lower latency; mismatched calls then hang until PLEXUS_TIMEOUT_MS)."},
  {"PLEXUS_FI_PROVIDER", ConfigType::String, "",
   "libfabric provider to use, e.g. \"tcp\", \"tcp;ofi_rxm\", \"shm\", \"efa\". Unset: efa if "
   "present, else shm when every rank is on one host and shm passes a self-test, else tcp."},
  {"PLEXUS_FI_NICS", ConfigType::String, "",
   "Comma-separated libfabric domains (NICs) the ranks of a job spanning hosts may use, e.g. "
   "\"eth0,eth1\" for tcp or \"rdmap79s0-rdm,rdmap80s0-rdm\" for efa; the local ranks are spread "
   "over them (by PCI locality to their GPUs where known, else in even blocks by local rank). "
   "Unset: efa spreads over all its NICs, tcp takes the first IPv4 interface that is not "
   "loopback. Not used when every rank is on one host (an INFO line says so). A list naming no "
   "NIC of the provider fails communicator creation."},
  {"PLEXUS_FI_MAX_MSG_BYTES", ConfigType::Bytes, "0",
   "Largest single libfabric message; larger transport messages are split. 0 uses the "
   "provider's max_msg_size. Small values exercise the split path in tests."},
  {"PLEXUS_FI_HMEM", ConfigType::Integer, "1",
   "FI_HMEM: plx_send and plx_recv of device buffers hand the libfabric provider registered "
   "device memory instead of staging it through host memory. 1: open the provider with FI_HMEM "
   "when its FI_HMEM entry serves host messages as well (efa). 2: whenever it offers one (shm of "
   "libfabric 1.17 then loses its inject protocol: a group of many sends before their receives "
   "can stall), and demand it: communicator creation fails when the provider refuses FI_HMEM "
   "or an efa NIC has no GPUDirect RDMA. 0: never. With 1 such a refusal is a WARN, once, where "
   "GPUDirect RDMA was expected (efa, or a GPU in the process). The provider itself never "
   "changes. Set alike on every rank; any other value fails communicator creation, whatever "
   "the transport."},
  {"PLEXUS_TIMEOUT_MS", ConfigType::Integer, "300000",
   "Bound in milliseconds on the rendezvous, on any single wait without progress, and on the "
   "shutdown handshake of plx_comm_destroy."},
  {"PLEXUS_SPIN_US", ConfigType::Integer, "200",
   "Microseconds a rank waiting on the transport (libfabric, UCX) or on a peer's counter in "
   "shared memory (the shm algorithms) keeps polling, with sched_yield between polls so that "
   "oversubscribed ranks give way, before it sleeps between polls (libfabric: 20 us growing to 1 "
   "ms), blocks on UCX's event descriptor or sleeps on the counter's futex. libfabric "
   "polls longer while the sends and receives it has posted and not finished total 64 KiB or "
   "more (tcp, udp and efa move a large message only while polled): for their bytes' time at 20 "
   "MB/s, at most 1 s, after the last completion, then sleeps at most 100 us at a time. "
   "0..1000000; 0: sleep at once when less is "
   "posted (least CPU, more latency for a peer that is almost there); 1000000 keeps a wait "
   "polling for 1 s."},
  {"PLEXUS_CHUNK_BYTES", ConfigType::Bytes, "1M",
   "Pipelining slice of the collective algorithms: the largest message the ring, chain, tree and "
   "halving/doubling algorithms cut a buffer into (across hosts at most what the network moves "
   "in 1 ms, docs/algorithms.md). Device buffers: the chunk of the pipelined "
   "staging (clamped to 64K..16M) and a quarter of a CUDA IPC slot."},
  {"PLEXUS_SHM", ConfigType::Integer, "1",
   "1: ranks of a communicator that all share a host map one shared-memory segment of staging "
   "buffers (2 x PLEXUS_CHUNK_BYTES per rank) and the cost model may pick the shm algorithms. "
   "0 on any rank: no segment (the shm algorithms, if forced, run their flat fallback) and no "
   "CUDA IPC for device buffers (they are staged)."},
  {"PLEXUS_DEBUG", ConfigType::LogLevel, "WARN",
   "Log level on stderr: WARN, INFO (decisions and errors) or TRACE (every message)."},
  {"PLEXUS_HOST_ID", ConfigType::String, "",
   "Overrides the host identity (default <hostname>/<boot id>); ranks with equal ids are "
   "on one host. Lets one machine emulate a cluster."},
  {"PLEXUS_PIN", ConfigType::String, "",
   "Pins each communicator's progress thread through hwloc: \"none\", \"numa\" (the NUMA node "
   "of the rank's local rank, or the process's own cpus when it is already bound) or \"core\" "
   "(one core per local rank). Unset: numa unless the process is bound to fewer cpus."},
  {"PLEXUS_ALGO", ConfigType::String, "",
   "Forces algorithms, e.g. \"allreduce:ring,broadcast:binomial\" (collective:algorithm, "
   "comma-separated; <collective>:auto or unset = chosen by the cost model). Names: "
   "docs/tuning.md; PLEXUS_DEBUG=INFO logs every choice and why."},
  {"PLEXUS_HIERARCHICAL_LANES", ConfigType::String, "auto",
   "Schedule of the hierarchical allreduce's lanes across hosts: \"ring\", \"halving\" "
   "(recursive halving and doubling) or \"auto\" (the cost model's choice; plexus-topo "
   "--simulate --explain names it). A forced schedule applies where the model may choose "
   "halving: 3 hosts or more, 2 ranks on some host, a two-level cost model (measured across "
   "hosts, 5 values of PLEXUS_COST_MODEL, or plexus-topo's topology file); else the lanes are a ring. Read when a "
   "communicator is created and compared across its ranks (creation fails where they "
   "differ); split children keep it. plexus-topo --simulate honours it too."},
  {"PLEXUS_COST_MODEL", ConfigType::String, "",
   "\"alpha_us,beta_ns_per_byte,gamma_ns_per_byte\" (e.g. \"2.5,0.1,0.05\"): the cost model's "
   "latency, inverse bandwidth and reduction cost, used instead of measuring them; two more "
   "values \"...,inter_alpha_us,inter_beta_ns_per_byte\" give the network between hosts. Lets "
   "one machine emulate another's algorithm choices."},
  {"PLEXUS_CACHE_DIR", ConfigType::String, "",
   "Folder of the measured cost-model parameters (one JSON file per host and provider). "
   "Unset: $XDG_CACHE_HOME/plexus, else $HOME/.cache/plexus. Delete the file to re-measure."},
  // Read outside libplexus: by a tool, the engine, the Python package or the tests.
  {"PLEXUS_TOPO_FILE", ConfigType::String, "",
   "Reads this host's topology from a file (Plexus JSON, or hwloc XML) instead of discovering "
   "it; a cluster file's host is chosen by PLEXUS_HOST_ID. plexus-topo --topo-file overrides "
   "it. See docs/topology.md.",
   "plexus-topo"},
  {"PLEXUS_TOPO_DUMP_FILE", ConfigType::String, "",
   "Writes the topology discovered or read (Plexus JSON) to this file.",
   "plexus-topo"},
  {"PLEXUS_PLUGIN_PATH", ConfigType::String, "",
   "Colon-separated folders searched first for libplexus_plugin_<name>.so.",
   "the engine"},
  {"PLEXUS_BUILD_DIR", ConfigType::String, "",
   "Build folder whose python/ holds plexus_torch, searched before <repository>/build.",
   "python/examples, tests/torch"},
  {"PLEXUS_PYTHON_DIR", ConfigType::String, "",
   "Folder holding plexus_torch for the torch tests' worker processes "
   "(default <repository>/build/python).",
   "tests/torch"},
  {"PLEXUS_SUITE_SKIP_LOG", ConfigType::String, "",
   "File the torch.distributed suite's ranks append each skip reason to.",
   "tests/torch/suite"},
  {"PLEXUS_TEST_FULL_MATRIX", ConfigType::String, "",
   "Set and not \"0\": the collectives matrix test runs its full product on every transport.",
   "tests/comm"},
  {"PLEXUS_TEST_RESUME_SEED", ConfigType::Integer, "",
   "Seed of the resume test's SIGTERM step (it prints the seed it drew).",
   "tests/e2e"},
  {"PLEXUS_TEST_SANITIZERS", ConfigType::Integer, "1",
   "0: scripts/test.sh leaves out what follows the test suite when run without arguments: the "
   "sanitizer jobs (scripts/test-sanitizers.sh) and the bounded fuzz runs (scripts/test-fuzz.sh).",
   "scripts/test.sh"},
  {"PLEXUS_CCACHE", ConfigType::Integer, "1",
   "0: the build scripts compile without ccache even where it is installed (scripts/ccache.sh).",
   "scripts/ccache.sh"},
  {"PLEXUS_EXPECT_ALGO", ConfigType::String, "hierarchical",
   "Algorithm the emulated cluster's driver expects every collective to report.",
   "tests/comm"},
};
// clang-format on

const char* type_name(ConfigType type) {
  switch (type) {
    case ConfigType::Integer: return "integer";
    case ConfigType::Bytes: return "bytes";
    case ConfigType::String: return "string";
    case ConfigType::LogLevel: return "level";
  }
  return "?";
}

}  // namespace

std::span<const ConfigVariable> config_variables() { return kVariables; }

const ConfigVariable* find_config_variable(std::string_view name) {
  for (const auto& var : kVariables) {
    if (var.name == name) return &var;
  }
  return nullptr;
}

void print_config_table(FILE* out) {
  for (const auto& var : kVariables) {
    const std::string reader =
        var.read_by.empty() ? std::string() : fmt::format("; read by {}", var.read_by);
    std::string text = fmt::format("{} ({}, default: {}{})\n    {}\n", var.name, type_name(var.type),
                                   var.default_value.empty() ? "unset" : var.default_value,
                                   reader, var.help);
    std::fwrite(text.data(), 1, text.size(), out);
  }
}

}  // namespace plexus
