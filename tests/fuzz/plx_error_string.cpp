// plx_error_string.cpp - for the fuzzers only: comm/base/error.cpp logs each error through the C
// ABI's plx_get_error_string, which lives in c_api.cpp with the whole communicator. The fuzzers
// link the few files they test, so they get this stand-in (the log line it goes into is INFO,
// which fuzzing never prints).
#include "plexus/plexus.h"

extern "C" const char* plx_get_error_string(plx_result_t result) {
  (void)result;
  return "a Plexus result (the fuzzers do not link the C ABI's names)";
}
