// c_api_checks.cpp - see c_api_checks.h.
#include "comm/api/c_api_checks.h"

#include <cstdint>

#include "comm/core/communicator.h"

namespace plexus::comm {

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

plx_result_t check_op(const char* fn, const plx_comm* comm, plx_red_op_t op,
                      plx_datatype_t datatype) {
  const int value = static_cast<int>(op);
  if (value >= 0 && value < PLX_NUM_OPS) return PLX_SUCCESS;
  const auto it = comm->premul_ops.find(value);
  if (it == comm->premul_ops.end()) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: op {} not in 0..{} and not a live pre-multiplied "
                                 "sum of this communicator",
                                 fn, comm->rank, value, PLX_NUM_OPS - 1));
  }
  if (it->second.datatype != datatype) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: op {} is a pre-multiplied sum for datatype {}, "
                                 "used with datatype {}",
                                 fn, comm->rank, value, static_cast<int>(it->second.datatype),
                                 static_cast<int>(datatype)));
  }
  return PLX_SUCCESS;
}

plx_result_t check_rank(const char* fn, const plx_comm* comm, const char* what, int value) {
  if (value < 0 || value >= comm->size) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: {} {} not in 0..{}", fn, comm->rank, what, value,
                                 comm->size - 1));
  }
  return PLX_SUCCESS;
}

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

plx_result_t check_count_times(const char* fn, const plx_comm* comm, const char* name,
                               size_t count, size_t factor, size_t* product) {
  if (factor > 0 && count > SIZE_MAX / factor) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: {} {} times {} ranks overflows size_t", fn,
                                 comm->rank, name, count, factor));
  }
  *product = count * factor;
  return PLX_SUCCESS;
}

plx_result_t check_overlap(const char* fn, const plx_comm* comm, const void* a, size_t a_bytes,
                           const void* b, size_t b_bytes, const char* a_name, const char* b_name) {
  if (!a || !b || a_bytes == 0 || b_bytes == 0) return PLX_SUCCESS;
  const auto lo_a = reinterpret_cast<uintptr_t>(a);
  const auto lo_b = reinterpret_cast<uintptr_t>(b);
  if (lo_a < lo_b + b_bytes && lo_b < lo_a + a_bytes) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("{}: rank {}: {} {} ({} bytes) and {} {} ({} bytes) overlap; "
                                 "use exactly the documented in-place layout or disjoint buffers",
                                 fn, comm->rank, a_name, a, a_bytes, b_name, b, b_bytes));
  }
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
