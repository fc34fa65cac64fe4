// ofi_util.h - small helpers shared by the libfabric transport's files: owning pointers for
// libfabric objects and the one way a libfabric error becomes a Plexus error.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <memory>
#include <string_view>

#include "plexus/plexus.h"

namespace plexus::comm::ofi {

// The libfabric API version Plexus asks for (1.x; built against 1.17 headers).
constexpr uint32_t kApiVersion = FI_VERSION(1, 17);

// Closes any libfabric object that has a `fid` member.
struct FidCloser {
  template <typename T>
  void operator()(T* object) const {
    if (object) fi_close(&object->fid);
  }
};
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser>;

struct InfoDeleter {
  void operator()(fi_info* info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// Records "rank R: <call> failed: <fi_strerror> (<ret>)[: <detail>]" and returns
// PLX_ERROR_TRANSPORT. `ret` is the negative value the call returned.
plx_result_t ofi_error(int rank, std::string_view call, long ret, std::string_view detail = {});

}  // namespace plexus::comm::ofi
