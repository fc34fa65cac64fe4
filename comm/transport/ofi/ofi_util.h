// ofi_util.h - small helpers shared by the libfabric transport's files: owning pointers for
// libfabric objects and the one way a libfabric error becomes a Plexus error.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <memory>
#include <string_view>

#include "plexus/plexus.h"

namespace plexus::comm::ofi {

// The oldest libfabric API version Plexus asks for: the version of the headers it is built
// against (Debian 12 ships 1.17).
constexpr uint32_t kMinApiVersion = FI_VERSION(1, 17);
// The first API version with which the efa provider enables device RDMA by default on every EFA
// generation, grants FI_HMEM on p4d's and keeps its shm offload on FI_HMEM endpoints
// (libfabric's man/fi_efa.7.md, "FI_OPT_CUDA_API_PERMITTED"; prov/efa/src/efa_domain.c).
constexpr uint32_t kDeviceRdmaApiVersion = FI_VERSION(1, 18);

// The API version to ask fi_getinfo for, given the loaded library's own (fi_version()): that
// version when it is kDeviceRdmaApiVersion or later, else kMinApiVersion. Asking for a newer
// version than the headers is what the library's ABI versioning allows: the structures Plexus
// sees keep the 1.17 layout, the provider's behaviour follows the version asked for.
uint32_t requested_api_version(uint32_t library_version);
// requested_api_version(fi_version()), computed once per process. Thread-safe.
uint32_t api_version();

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
