// c_api_checks.h - what every C ABI entry point shares: the exception guard that prefixes
// messages with the function name, and the argument checks, whose messages read
// "plx_fn: rank R: <argument> <value> not in <range>".
#pragma once

#include <fmt/format.h>

#include <exception>
#include <new>
#include <string_view>

#include "comm/base/error.h"
#include "plexus/plexus.h"

struct plx_comm;

namespace plexus::comm {

// Runs `body` for the public function `fn`: no exception escapes, and a failure's message
// always starts with "fn: ".
template <typename Body>
plx_result_t guarded(const char* fn, Body&& body) {
  clear_error();
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
    clear_error();
    return result;
  }
  const std::string_view message = last_error();
  if (message.empty()) {
    return set_error(result, fmt::format("{}: failed with {}", fn, plx_get_error_string(result)));
  }
  if (!message.starts_with(fn)) return set_error(result, fmt::format("{}: {}", fn, message));
  return result;
}

plx_result_t null_argument(const char* fn, const plx_comm* comm, const char* what);
plx_result_t check_datatype(const char* fn, const plx_comm* comm, plx_datatype_t datatype);
// Built-in ops, or a live pre-multiplied sum of comm made for `datatype`.
plx_result_t check_op(const char* fn, const plx_comm* comm, plx_red_op_t op,
                      plx_datatype_t datatype);
plx_result_t check_rank(const char* fn, const plx_comm* comm, const char* what, int value);
// A NULL buffer is allowed only with count 0; count * element size must fit in size_t.
plx_result_t check_buffer(const char* fn, const plx_comm* comm, const char* name,
                          const void* buffer, size_t count, plx_datatype_t datatype);
// `count` elements at a multiplied by `factor` (n for the n-block buffers) must fit in size_t.
plx_result_t check_count_times(const char* fn, const plx_comm* comm, const char* name,
                               size_t count, size_t factor, size_t* product);
// Two byte ranges must be disjoint (callers first accept their exact in-place layout).
plx_result_t check_overlap(const char* fn, const plx_comm* comm, const void* a, size_t a_bytes,
                           const void* b, size_t b_bytes, const char* a_name, const char* b_name);

}  // namespace plexus::comm
