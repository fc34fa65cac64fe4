// c_api_requests.cpp - requests of the non-blocking calls (plx_wait, plx_test) and groups
// (plx_group_start, plx_group_end) of include/plexus/plexus.h.
#include <fmt/format.h>

#include <memory>

#include "comm/core/c_api_checks.h"
#include "comm/core/submit.h"

namespace {
using namespace plexus::comm;  // NOLINT: the C ABI layer of this namespace
}  // namespace

extern "C" {

plx_result_t plx_wait(plx_request_t request) {
  constexpr const char* fn = "plx_wait";
  return guarded(fn, [&] {
    if (!request) return null_argument(fn, nullptr, "request");
    if (in_open_group(*request->task)) {
      // Its group has not been started: waiting would never end.
      return plexus::set_error(PLX_ERROR_INVALID_USAGE,
                               fmt::format("{}: the request belongs to the open group; call "
                                           "plx_group_end() first",
                                           fn));
    }
    std::unique_ptr<plx_request> owned(request);
    return owned->task->wait();
  });
}

plx_result_t plx_test(plx_request_t request, int* done) {
  constexpr const char* fn = "plx_test";
  return guarded(fn, [&] {
    if (!request) return null_argument(fn, nullptr, "request");
    if (!done) return null_argument(fn, nullptr, "done");
    bool finished = false;
    const plx_result_t result = request->task->poll(&finished);
    *done = finished ? 1 : 0;
    if (finished) delete request;
    return result;
  });
}

plx_result_t plx_group_start(void) {
  return guarded("plx_group_start", [] {
    group_start();
    return PLX_SUCCESS;
  });
}

plx_result_t plx_group_end(void) {
  return guarded("plx_group_end", [] { return group_end(); });
}

}  // extern "C"
