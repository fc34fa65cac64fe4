// c_api_requests.cpp - requests of the non-blocking calls (plx_wait, plx_test, plx_waitall) and
// groups (plx_group_start, plx_group_end) of include/plexus/plexus.h. Completing a request runs
// its operation's completion steps (comm/core/task.h: the copy back of staged device buffers).
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "comm/api/c_api_checks.h"
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
                               fmt::format("{}: the request belongs to an open group; call "
                                           "plx_group_end() first",
                                           fn));
    }
    std::unique_ptr<plx_request> owned(request);
    return owned->task->complete();
  });
}

plx_result_t plx_waitall(size_t count, plx_request_t* requests) {
  constexpr const char* fn = "plx_waitall";
  return guarded(fn, [&]() -> plx_result_t {
    if (count == 0) return PLX_SUCCESS;
    if (!requests) return null_argument(fn, nullptr, "requests");
    // Refused before anything is waited for or freed: a request listed twice would be freed
    // twice.
    std::vector<std::pair<plx_request_t, size_t>> listed;
    for (size_t i = 0; i < count; ++i) {
      if (requests[i]) listed.emplace_back(requests[i], i);
    }
    std::sort(listed.begin(), listed.end());
    for (size_t k = 1; k < listed.size(); ++k) {
      if (listed[k].first == listed[k - 1].first) {
        return plexus::set_error(PLX_ERROR_INVALID_ARGUMENT,
                                 fmt::format("{}: requests[{}] and requests[{}] are the same "
                                             "request",
                                             fn, listed[k - 1].second, listed[k].second));
      }
    }
    for (size_t i = 0; i < count; ++i) {
      if (requests[i] && in_open_group(*requests[i]->task)) {
        return plexus::set_error(PLX_ERROR_INVALID_USAGE,
                                 fmt::format("{}: requests[{}] belongs to an open group; call "
                                             "plx_group_end() first",
                                             fn, i));
      }
    }
    plx_result_t first = PLX_SUCCESS;
    std::string message;
    for (size_t i = 0; i < count; ++i) {
      if (!requests[i]) continue;
      std::unique_ptr<plx_request> owned(requests[i]);
      requests[i] = nullptr;
      const plx_result_t result = owned->task->complete();
      if (result != PLX_SUCCESS && first == PLX_SUCCESS) {
        first = result;
        message = fmt::format("{}: requests[{}]: {}", fn, i, plexus::last_error());
      }
    }
    if (first != PLX_SUCCESS) return plexus::set_error(first, message);
    return PLX_SUCCESS;
  });
}

plx_result_t plx_test(plx_request_t request, int* done) {
  constexpr const char* fn = "plx_test";
  return guarded(fn, [&] {
    if (!request) return null_argument(fn, nullptr, "request");
    if (!done) return null_argument(fn, nullptr, "done");
    if (in_open_group(*request->task)) {
      *done = 0;
      return plexus::set_error(PLX_ERROR_INVALID_USAGE,
                               fmt::format("{}: the request belongs to an open group; call "
                                           "plx_group_end() first",
                                           fn));
    }
    bool finished = false;
    const plx_result_t result = request->task->try_complete(&finished);
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
