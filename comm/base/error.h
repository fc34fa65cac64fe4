// error.h - how Plexus reports failures inside the collective library.
//
// The first code that detects a failure writes the message (operation, rank, peer, argument,
// value, valid range) with set_error(); callers propagate the code with PLX_CHECK, which adds
// file:line to the debug log (PLEXUS_DEBUG=INFO) and returns. Nothing throws across the C ABI.
#pragma once

#include <string>

#include "plexus/plexus.h"

namespace plexus {

// Records `message` as the calling thread's last error and returns `code`.
plx_result_t set_error(plx_result_t code, std::string message);

// The calling thread's last error message ("" if none).
const char* last_error();

// Clears the calling thread's last error (called on entry of each public function).
void clear_error();

// Logs "file:line: expr failed with CODE" at PLEXUS_DEBUG=INFO (or finer).
void log_check_failure(const char* file, int line, const char* expr, plx_result_t code);

}  // namespace plexus

#define PLX_CHECK(expr)                                             \
  do {                                                              \
    plx_result_t plx_check_result_ = (expr);                        \
    if (plx_check_result_ != PLX_SUCCESS) {                         \
      ::plexus::log_check_failure(__FILE__, __LINE__, #expr,        \
                                  plx_check_result_);               \
      return plx_check_result_;                                     \
    }                                                               \
  } while (0)
