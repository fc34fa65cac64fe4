// c_api_memory.cpp - plx_mem_alloc, plx_mem_free, plx_comm_register and plx_comm_deregister of
// include/plexus/plexus.h (the registered-buffer section); the memory itself is
// shared_allocations.h's.
#include <fmt/format.h>

#include "comm/api/c_api_checks.h"
#include "comm/base/error.h"
#include "comm/core/communicator.h"
#include "comm/core/shared_allocations.h"
#include "plexus/plexus.h"

using plexus::set_error;
using plexus::comm::guarded;
using plexus::comm::null_argument;

plx_result_t plx_mem_alloc(void** ptr, size_t bytes) {
  return guarded("plx_mem_alloc",
                 [&] { return plexus::comm::shared_alloc("plx_mem_alloc", bytes, ptr); });
}

plx_result_t plx_mem_free(void* ptr) {
  return guarded("plx_mem_free", [&] { return plexus::comm::shared_free("plx_mem_free", ptr); });
}

plx_result_t plx_comm_register(plx_comm_t comm, void* buff, size_t bytes, void** handle) {
  constexpr const char* fn = "plx_comm_register";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (!buff) return null_argument(fn, comm, "buff");
    if (!handle) return null_argument(fn, comm, "handle");
    if (bytes == 0) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: bytes is 0", fn, comm->rank));
    }
    plexus::comm::SharedBufferRef ref;
    if (!plexus::comm::shared_allocation_of(buff, bytes, &ref)) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: buff {} (+{} bytes) is not inside one "
                                   "allocation of plx_mem_alloc",
                                   fn, comm->rank, buff, bytes));
    }
    *handle = comm->registrations.add(buff, bytes, ref.alloc_id);
    return PLX_SUCCESS;
  });
}

plx_result_t plx_comm_deregister(plx_comm_t comm, void* handle) {
  constexpr const char* fn = "plx_comm_deregister";
  return guarded(fn, [&] {
    if (!comm) return null_argument(fn, nullptr, "comm");
    if (!handle || !comm->registrations.remove(handle)) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("{}: rank {}: handle {} is not a registration of this "
                                   "communicator",
                                   fn, comm->rank, handle));
    }
    return PLX_SUCCESS;
  });
}
