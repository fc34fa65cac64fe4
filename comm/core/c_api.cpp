// c_api.cpp - every function of include/plexus/plexus.h.
//
// Each entry point clears the thread's last error, checks its arguments (messages
// "plx_fn: rank R: <argument> <value> not in <range>"), runs inside guarded() so no exception
// crosses the ABI, writes its outputs only on success, and prefixes messages that deeper layers
// wrote ("rank R: ...") with its own name.
#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <new>
#include <string>
#include <string_view>

#include "comm/algorithms/algorithms.h"
#include "comm/bootstrap/launcher_env.h"
#include "comm/bootstrap/rendezvous_server.h"
#include "comm/bootstrap/unique_id.h"
#include "comm/bootstrap/unique_id_server.h"
#include "comm/core/communicator.h"
#include "comm/core/config.h"
#include "comm/core/error.h"
#include "comm/reduce/reduce.h"
#include "plexus/plexus.h"

namespace {

using plexus::set_error;

// Runs `body` for the public function `fn`: no exception escapes, and a failure's message
// always starts with "fn: ".
template <typename Body>
plx_result_t guarded(const char* fn, Body&& body) {
  plexus::clear_error();
  plx_result_t result = PLX_SUCCESS;
  try {
    result = body();
  } catch (const std::bad_alloc&) {
    return set_error(PLX_ERROR_SYSTEM, fmt::format("{}: out of memory", fn));
  } catch (const std::exception& e) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("{}: unexpected exception: {}", fn, e.what()));
  } catch (...) {
    return set_error(PLX_ERROR_INTERNAL, fmt::format("{}: unexpected exception", fn));
  }
  if (result == PLX_SUCCESS) {
    plexus::clear_error();
    return result;
  }
  const std::string_view message = plexus::last_error();
  if (message.empty()) {
    return set_error(result, fmt::format("{}: failed with {}", fn, plx_get_error_string(result)));
  }
  if (!message.starts_with(fn)) {
    return set_error(result, fmt::format("{}: {}", fn, message));
  }
  return result;
}

// Tells plx_comm_abort() a call is using the communicator.
class ActiveCall {
 public:
  explicit ActiveCall(plx_comm* comm) : comm_(comm) { comm_->active_calls.fetch_add(1); }
  ~ActiveCall() { comm_->active_calls.fetch_sub(1); }
  ActiveCall(const ActiveCall&) = delete;
  ActiveCall& operator=(const ActiveCall&) = delete;

 private:
  plx_comm* comm_;
};

plx_result_t null_argument(const char* fn, const plx_comm* comm, const char* what) {
  if (comm) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: {} is NULL", fn, comm->rank, what));
  }
  return set_error(PLX_ERROR_INVALID_ARGUMENT, fmt::format("{}: {} is NULL", fn, what));
}

plx_result_t check_datatype(const char* fn, const plx_comm* comm, plx_datatype_t datatype) {
  const int value = static_cast<int>(datatype);
  if (value < 0 || value >= PLX_NUM_DATATYPES) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: datatype {} not in 0..{}", fn, comm->rank, value,
                                 PLX_NUM_DATATYPES - 1));
  }
  return PLX_SUCCESS;
}

plx_result_t check_stream(const char* fn, const plx_comm* comm, const void* stream) {
  if (stream) {
    return set_error(PLX_ERROR_UNSUPPORTED,
                     fmt::format("{}: rank {}: stream {} is not NULL; device streams are not "
                                 "supported in this version",
                                 fn, comm->rank, stream));
  }
  return PLX_SUCCESS;
}

// A NULL buffer is allowed only with count 0; count * element size must fit in size_t.
plx_result_t check_buffer(const char* fn, const plx_comm* comm, const char* name,
                          const void* buffer, size_t count, plx_datatype_t datatype) {
  if (count > 0 && !buffer) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: {} is NULL with count {}", fn, comm->rank, name,
                                 count));
  }
  const size_t element_bytes = plx_datatype_size(datatype);
  if (element_bytes > 0 && count > SIZE_MAX / element_bytes) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: count {} of {}-byte elements overflows size_t", fn,
                                 comm->rank, count, element_bytes));
  }
  return PLX_SUCCESS;
}

// Send and receive buffers must be the same (in place) or disjoint.
plx_result_t check_overlap(const char* fn, const plx_comm* comm, const void* sendbuf,
                           const void* recvbuf, size_t count, plx_datatype_t datatype) {
  if (count == 0 || sendbuf == recvbuf || !sendbuf || !recvbuf) return PLX_SUCCESS;
  const auto send = reinterpret_cast<uintptr_t>(sendbuf);
  const auto recv = reinterpret_cast<uintptr_t>(recvbuf);
  const size_t bytes = count * plx_datatype_size(datatype);
  if (send < recv + bytes && recv < send + bytes) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: sendbuf {} and recvbuf {} overlap by part of their "
                                 "{} bytes; pass the same pointer for in place",
                                 fn, comm->rank, sendbuf, recvbuf, bytes));
  }
  return PLX_SUCCESS;
}

template <typename T>
plx_result_t query(const char* fn, plx_comm_t comm, T* out, const char* out_name, T value_of_comm) {
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (!out) return null_argument(fn, comm, out_name);
    *out = value_of_comm;
    return PLX_SUCCESS;
  });
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
    case PLX_ERROR_REMOTE: return "PLX_ERROR_REMOTE: a peer died or disconnected";
    case PLX_ERROR_TIMEOUT:
      return "PLX_ERROR_TIMEOUT: an operation or the rendezvous exceeded PLEXUS_TIMEOUT_MS";
    case PLX_ERROR_TRANSPORT: return "PLX_ERROR_TRANSPORT: libfabric reported an error";
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
    PLX_CHECK(plexus::bootstrap::read_launcher_env(&env));
    plexus::comm::CommSetup setup;
    setup.rank = env.rank;
    setup.nranks = env.world_size;
    setup.local_rank = env.local_rank;
    setup.local_size = env.local_size;
    if (env.world_size > 1) {
      setup.address.host = env.master_addr;
      setup.address.port = env.master_port;
      setup.address.nonce = 0;
      if (env.rank == 0) {
        int timeout_ms = 0;
        PLX_CHECK(plexus::config_timeout_ms(&timeout_ms));
        if (plexus::bootstrap::RendezvousServer::start(env.master_addr, env.master_port, 0,
                                                       timeout_ms, &setup.server) != PLX_SUCCESS) {
          return set_error(PLX_ERROR_SYSTEM, fmt::format("{}: rank 0: {}", fn,
                                                         plexus::last_error()));
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
    return plexus::comm::destroy_communicator(comm);
  });
}

plx_result_t plx_comm_abort(plx_comm_t comm) {
  return guarded("plx_comm_abort", [&] {
    if (comm) plexus::comm::abort_communicator(comm);
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_get_async_error(plx_comm_t comm, plx_result_t* async_error) {
  return query("plx_comm_get_async_error", comm, async_error, "async_error",
               comm ? comm->async->error() : PLX_SUCCESS);
}

plx_result_t plx_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, plx_red_op_t op, plx_comm_t comm,
                           void* stream) {
  constexpr const char* fn = "plx_allreduce";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    PLX_CHECK(check_stream(fn, comm, stream));
    PLX_CHECK(check_datatype(fn, comm, datatype));
    const int op_value = static_cast<int>(op);
    if (op_value < 0 || op_value >= PLX_NUM_OPS) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: op {} not in 0..{}", fn, comm->rank, op_value,
                                   PLX_NUM_OPS - 1));
    }
    PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, count, datatype));
    PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, count, datatype));
    PLX_CHECK(check_overlap(fn, comm, sendbuf, recvbuf, count, datatype));
    if (count == 0) return PLX_SUCCESS;
    ActiveCall active(comm);
    plexus::comm::CollArgs args;
    args.sendbuf = sendbuf;
    args.recvbuf = recvbuf;
    args.count = count;
    args.datatype = datatype;
    args.op = op;
    args.chunk_bytes = comm->chunk_bytes;
    return plexus::comm::ring_allreduce(*comm->transport, comm->next_tag_base(), args);
  });
}

plx_result_t plx_broadcast(const void* sendbuf, void* recvbuf, size_t count,
                           plx_datatype_t datatype, int root, plx_comm_t comm, void* stream) {
  constexpr const char* fn = "plx_broadcast";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    PLX_CHECK(check_stream(fn, comm, stream));
    if (root < 0 || root >= comm->size) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: root {} not in 0..{}", fn, comm->rank, root,
                                   comm->size - 1));
    }
    PLX_CHECK(check_datatype(fn, comm, datatype));
    PLX_CHECK(check_buffer(fn, comm, "recvbuf", recvbuf, count, datatype));
    if (comm->rank == root) {
      PLX_CHECK(check_buffer(fn, comm, "sendbuf", sendbuf, count, datatype));
      PLX_CHECK(check_overlap(fn, comm, sendbuf, recvbuf, count, datatype));
    }
    if (count == 0) return PLX_SUCCESS;
    ActiveCall active(comm);
    plexus::comm::CollArgs args;
    args.collective = plexus::comm::Collective::Broadcast;
    args.sendbuf = sendbuf;
    args.recvbuf = recvbuf;
    args.count = count;
    args.datatype = datatype;
    args.root = root;
    args.chunk_bytes = comm->chunk_bytes;
    const size_t bytes = count * plx_datatype_size(datatype);
    return (bytes < comm->chunk_bytes ? plexus::comm::binomial_broadcast
                                      : plexus::comm::chain_broadcast)(
        *comm->transport, comm->next_tag_base(), args);
  });
}

plx_result_t plx_barrier(plx_comm_t comm) {
  constexpr const char* fn = "plx_barrier";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    ActiveCall active(comm);
    return plexus::comm::dissemination_barrier(*comm->transport, comm->next_tag_base(),
                                               plexus::comm::CollArgs{});
  });
}

size_t plx_datatype_size(plx_datatype_t datatype) {
  return plexus::comm::datatype_bytes(datatype);
}

}  // extern "C"
