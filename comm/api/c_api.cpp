// c_api.cpp - the communicator functions of include/plexus/plexus.h: errors and version,
// creation, queries, split, destroy and abort, pre-multiplied sums and algorithm control.
// The collectives are in c_api_collectives.cpp, requests and groups in c_api_requests.cpp.
//
// Each entry point clears the thread's last error, checks its arguments (messages
// "plx_fn: rank R: <argument> <value> not in <range>"), runs inside guarded() so no exception
// crosses the ABI, writes its outputs only on success, and prefixes messages that deeper layers
// wrote ("rank R: ...") with its own name.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <string_view>

#include "comm/bootstrap/job_key.h"
#include "comm/bootstrap/launcher_env.h"
#include "comm/bootstrap/rendezvous_server.h"
#include "comm/bootstrap/unique_id.h"
#include "comm/bootstrap/unique_id_server.h"
#include "comm/api/c_api_checks.h"
#include "comm/core/communicator.h"
#include "comm/core/submit.h"
#include "comm/device/cuda_devices.h"
#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/reduce/reduce.h"
#include "comm/transport/ofi/ofi_util.h"
#include "comm/tuning/algo_override.h"
#include "plexus/plexus.h"

namespace {

using namespace plexus::comm;  // NOLINT: the C ABI layer of this namespace
using plexus::set_error;

template <typename T>
plx_result_t query(const char* fn, plx_comm_t comm, T* out, const char* out_name, T value_of_comm) {
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (!out) return null_argument(fn, comm, out_name);
    *out = value_of_comm;
    return PLX_SUCCESS;
  });
}

// Once per process: the env path found no secret to prove at the rendezvous.
void warn_unauthenticated(const plexus::bootstrap::LauncherEnv& env,
                          const plexus::bootstrap::JobKey& key) {
  static std::once_flag once;
  std::call_once(once, [&] {
    plexus::log_message(
        key.source == "none" ? plexus::LogLevel::Warn : plexus::LogLevel::Info,
        "rank {}: the rendezvous at {}:{} is keyed by {}, which is no secret: a process that "
        "can reach that address and knows it can join this job. Set PLEXUS_JOB_TOKEN (plexus-run "
        "does) to keep strangers out; see docs/security.md",
        env.rank, env.master_addr, env.master_port,
        key.source == "none" ? std::string("nothing (no PLEXUS_JOB_TOKEN, no launcher job id)")
                             : key.source);
  });
}

// The caller's GPU for the transport's NIC choice (CommSetup).
void describe_gpu(CommSetup* setup) {
  setup->gpu_visible = device::cuda_device_count(nullptr) > 0;
  if (setup->gpu_visible) setup->gpu_pci_bus_id = device::current_device_pci_bus_id();
}

}  // namespace

extern "C" {

const char* plx_get_error_string(plx_result_t result) {
  switch (result) {
    case PLX_SUCCESS: return "PLX_SUCCESS: no error";
    case PLX_ERROR_INVALID_ARGUMENT:
      return "PLX_ERROR_INVALID_ARGUMENT: an argument is NULL, out of range or malformed";
    case PLX_ERROR_INVALID_USAGE:
      return "PLX_ERROR_INVALID_USAGE: a valid argument used in a wrong state";
    case PLX_ERROR_UNSUPPORTED:
      return "PLX_ERROR_UNSUPPORTED: not provided by this build or transport";
    case PLX_IN_PROGRESS: return "PLX_IN_PROGRESS: not finished yet";
    case PLX_ERROR_MISMATCH:
      return "PLX_ERROR_MISMATCH: ranks called a collective with different arguments";
    case PLX_ERROR_REMOTE: return "PLX_ERROR_REMOTE: a peer died or disconnected";
    case PLX_ERROR_TIMEOUT:
      return "PLX_ERROR_TIMEOUT: an operation or the rendezvous exceeded PLEXUS_TIMEOUT_MS";
    case PLX_ERROR_TRANSPORT: return "PLX_ERROR_TRANSPORT: the transport (libfabric, UCX) reported an error";
    case PLX_ERROR_ABORTED: return "PLX_ERROR_ABORTED: the communicator was aborted";
    case PLX_ERROR_SYSTEM: return "PLX_ERROR_SYSTEM: an OS call or allocation failed";
    case PLX_ERROR_INTERNAL: return "PLX_ERROR_INTERNAL: a Plexus bug; please report it";
  }
  return "unknown plx_result_t";
}

const char* plx_get_last_error(plx_comm_t /*comm*/) { return plexus::last_error(); }

plx_result_t plx_get_version(int* version) {
  return guarded("plx_get_version", [&] {
    if (!version) return null_argument("plx_get_version", nullptr, "version");
    *version = PLX_VERSION;
    return PLX_SUCCESS;
  });
}

plx_result_t plx_get_libfabric_version(unsigned* library_version, unsigned* api_version) {
  return guarded("plx_get_libfabric_version", [&] {
    if (library_version) *library_version = fi_version();
    if (api_version) *api_version = plexus::comm::ofi::api_version();
    return PLX_SUCCESS;
  });
}

plx_result_t plx_get_log_level(int* level) {
  return guarded("plx_get_log_level", [&] {
    if (!level) return null_argument("plx_get_log_level", nullptr, "level");
    *level = static_cast<int>(plexus::log_level());
    return PLX_SUCCESS;
  });
}

plx_result_t plx_print_config(FILE* out) {
  return guarded("plx_print_config", [&] {
    if (!out) return null_argument("plx_print_config", nullptr, "out");
    plexus::print_config_table(out);
    if (std::ferror(out) || std::fflush(out) != 0) {
      return set_error(PLX_ERROR_SYSTEM, "plx_print_config: writing the table failed");
    }
    return PLX_SUCCESS;
  });
}

plx_result_t plx_get_unique_id(plx_unique_id_t* id) {
  return guarded("plx_get_unique_id", [&] {
    if (!id) return null_argument("plx_get_unique_id", nullptr, "id");
    plexus::bootstrap::RendezvousAddress address;
    PLX_CHECK(plexus::bootstrap::start_unique_id_server(&address));
    plexus::bootstrap::encode_unique_id(address, id);
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_init_rank(plx_comm_t* comm, int nranks, plx_unique_id_t id, int rank) {
  constexpr const char* fn = "plx_comm_init_rank";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (nranks < 1) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: nranks {} is below 1", fn, rank, nranks));
    }
    if (rank < 0 || rank >= nranks) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: rank {} not in 0..{}", fn, rank, rank,
                                   nranks - 1));
    }
    plexus::comm::CommSetup setup;
    setup.rank = rank;
    setup.nranks = nranks;
    describe_gpu(&setup);
    if (plexus::bootstrap::decode_unique_id(id, &setup.address) != PLX_SUCCESS) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: {}", fn, rank, plexus::last_error()));
    }
    plx_comm* created = nullptr;
    PLX_CHECK(plexus::comm::create_communicator(std::move(setup), &created));
    *comm = created;
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_init_from_env(plx_comm_t* comm) {
  constexpr const char* fn = "plx_comm_init_from_env";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    plexus::bootstrap::LauncherEnv env;
    plexus::comm::CommSetup setup;
    describe_gpu(&setup);
    if (plx_result_t bad = plexus::bootstrap::read_launcher_env(&env); bad != PLX_SUCCESS) {
      // A bad local rank or size still leaves this rank able to reach the rendezvous: it
      // connects and reports the error there, so the others learn it at once instead of
      // waiting out PLEXUS_TIMEOUT_MS for a rank that never came.
      setup.deferred_error = plexus::last_error();
      if (plexus::bootstrap::read_launcher_env(&env, /*with_local=*/false) != PLX_SUCCESS ||
          env.world_size == 1) {
        return set_error(bad, setup.deferred_error);
      }
    }
    setup.rank = env.rank;
    setup.nranks = env.world_size;
    setup.local_rank = env.local_rank;
    setup.local_size = env.local_size;
    if (env.world_size > 1) {
      setup.address.host = env.master_addr;
      setup.address.port = env.master_port;
      plexus::bootstrap::JobKey key;
      if (plexus::bootstrap::job_key_from_env(&key) != PLX_SUCCESS) {
        return set_error(PLX_ERROR_INVALID_ARGUMENT,
                         fmt::format("{}: rank {}: {}", fn, env.rank, plexus::last_error()));
      }
      if (!key.secret) warn_unauthenticated(env, key);
      setup.address.key = key.bytes;
      if (env.rank == 0) {
        // A malformed PLEXUS_TIMEOUT_MS is reported once connected, to every rank
        // (create_communicator); the server meanwhile uses the default.
        int timeout_ms = 300000;
        if (plexus::config_timeout_ms(&timeout_ms) != PLX_SUCCESS) plexus::clear_error();
        const plx_result_t started = plexus::bootstrap::RendezvousServer::start(
            env.master_addr, env.master_port, key.bytes, timeout_ms, &setup.server);
        if (started != PLX_SUCCESS) {
          return set_error(started, fmt::format("{}: rank 0: {}", fn, plexus::last_error()));
        }
      }
    }
    plx_comm* created = nullptr;
    PLX_CHECK(plexus::comm::create_communicator(std::move(setup), &created));
    *comm = created;
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_rank(plx_comm_t comm, int* rank) {
  return query("plx_comm_rank", comm, rank, "rank", comm ? comm->rank : 0);
}

plx_result_t plx_comm_size(plx_comm_t comm, int* size) {
  return query("plx_comm_size", comm, size, "size", comm ? comm->size : 0);
}

plx_result_t plx_comm_local_rank(plx_comm_t comm, int* local_rank) {
  return query("plx_comm_local_rank", comm, local_rank, "local_rank",
               comm ? comm->local_rank : 0);
}

plx_result_t plx_comm_local_size(plx_comm_t comm, int* local_size) {
  return query("plx_comm_local_size", comm, local_size, "local_size",
               comm ? comm->local_size : 0);
}

plx_result_t plx_comm_transport_name(plx_comm_t comm, const char** name) {
  return query<const char*>("plx_comm_transport_name", comm, name, "name",
                            comm ? comm->transport->name() : nullptr);
}

plx_result_t plx_comm_destroy(plx_comm_t comm) {
  return guarded("plx_comm_destroy", [&] {
    if (!comm) return PLX_SUCCESS;
    if (in_group()) {
      return set_error(PLX_ERROR_INVALID_USAGE,
                       fmt::format("plx_comm_destroy: rank {}: called inside a group", comm->rank));
    }
    return plexus::comm::destroy_communicator(comm);
  });
}

plx_result_t plx_comm_abort(plx_comm_t comm) {
  return guarded("plx_comm_abort", [&] {
    if (comm && in_group()) {
      return set_error(PLX_ERROR_INVALID_USAGE,
                       fmt::format("plx_comm_abort: rank {}: called inside a group", comm->rank));
    }
    if (comm) plexus::comm::abort_communicator(comm);
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_get_async_error(plx_comm_t comm, plx_result_t* async_error) {
  return query("plx_comm_get_async_error", comm, async_error, "async_error",
               comm ? comm->async->error() : PLX_SUCCESS);
}

plx_result_t plx_comm_split(plx_comm_t comm, int color, int key, plx_comm_t* newcomm) {
  constexpr const char* fn = "plx_comm_split";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (!newcomm) return null_argument(fn, comm, "newcomm");
    if (in_group()) {
      return set_error(PLX_ERROR_INVALID_USAGE,
                       fmt::format("{}: rank {}: called inside a group", fn, comm->rank));
    }
    plx_comm* created = nullptr;
    PLX_CHECK(split_communicator(comm, color, key, &created));
    *newcomm = created;
    return PLX_SUCCESS;
  });
}

plx_result_t plx_red_op_create_premul_sum(plx_red_op_t* op, const void* scalar,
                                          plx_datatype_t datatype, plx_comm_t comm) {
  constexpr const char* fn = "plx_red_op_create_premul_sum";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (!op) return null_argument(fn, comm, "op");
    if (!scalar) return null_argument(fn, comm, "scalar");
    PLX_CHECK(check_datatype(fn, comm, datatype));
    plx_comm::PremulOp premul{datatype, {}};
    std::memcpy(premul.scalar, scalar, plx_datatype_size(datatype));
    const int value = comm->next_premul_op++;
    comm->premul_ops[value] = premul;
    *op = static_cast<plx_red_op_t>(value);
    return PLX_SUCCESS;
  });
}

plx_result_t plx_red_op_destroy(plx_red_op_t op, plx_comm_t comm) {
  constexpr const char* fn = "plx_red_op_destroy";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (comm->premul_ops.erase(static_cast<int>(op)) == 0) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: op {} is not a live pre-multiplied sum of this "
                                   "communicator",
                                   fn, comm->rank, static_cast<int>(op)));
    }
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_set_algorithm(plx_comm_t comm, const char* spec) {
  constexpr const char* fn = "plx_comm_set_algorithm";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    AlgoOverrides overrides;
    const std::string text = spec ? spec : "";
    if (parse_algo_overrides(text, &overrides) != PLX_SUCCESS) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: {}", fn, comm->rank, plexus::last_error()));
    }
    // Queued work keeps the choice it was made under: wait for it first.
    comm->executor->drain();
    comm->overrides = overrides;
    comm->overrides_spec = text;
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_last_algorithm(plx_comm_t comm, const char** name) {
  return query<const char*>("plx_comm_last_algorithm", comm, name, "name",
                            comm ? comm->last_algorithm.c_str() : nullptr);
}

size_t plx_datatype_size(plx_datatype_t datatype) {
  return plexus::comm::datatype_bytes(datatype);
}

}  // extern "C"
