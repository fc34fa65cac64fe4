// hmem_p2p.cpp - plx_send / plx_recv of device buffers straight through the transport, with
// libfabric FI_HMEM (issue 6: "across nodes: libfabric with FI_HMEM registration where the
// provider supports it (EFA does), otherwise pipelined staging through pinned host buffers").
//
// When the communicator's provider was opened with FI_HMEM (comm/transport/ofi/provider_select.h)
// the device buffer goes to the provider as it is: registered with the domain (iface
// FI_HMEM_CUDA, the buffer's device; comm/transport/ofi/registration_cache.h keeps the
// registration of the whole allocation for the next call) and its descriptor passed to fi_tsend /
// fi_trecv. No pinned staging, no copies by Plexus: EFA reads and writes GPU memory directly, shm
// copies it with CUDA IPC or its own bounce buffers.
//
// On the wire the call is exactly what the staged path sends: one message, or the staged
// pipeline's chunks when it would cut the call (staged_pipeline.h: pipelined(), chunks of
// staging_chunk_elems()), with the same point-to-point tags in the same order. So a peer that
// stages (its provider refused to register, or it runs PLEXUS_FI_HMEM=0) still matches.
//
//   1. describe  the allocation holding the buffer (cuPointerGetAttributes: buffer id, start,
//                size, device), and ask the driver to make copies touching it synchronous
//                (CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, as libfabric's EFA provider does)
//   2. post      as a task of the communicator's executor, with the device current there: every
//                message with post_send_hmem / post_recv_hmem (the first registers); a refused
//                registration before anything is posted ends here: *fell_back, nothing sent
//   3. wait      for every message, then cudaStreamSynchronize(cudaStreamLegacy): the
//                provider's own CUDA copies (cudaMemcpy, on the legacy stream) have finished
//                when the call returns, so later work on the caller's stream sees the bytes
//
// plx_comm_last_algorithm says "send:fi_hmem" or "recv:fi_hmem" after such a call.
#include <cuda.h>
#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "comm/algorithms/deliberate_leak.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/core/communicator.h"
#include "comm/core/submit.h"
#include "comm/device/cuda_driver.h"
#include "comm/device/device_paths.h"
#include "comm/device/staged_pipeline.h"
#include "comm/transport/tag.h"

namespace plexus::comm::device {

namespace {

using PointerGetAttributes = CUresult (*)(unsigned, CUpointer_attribute*, void**, CUdeviceptr);
using PointerSetAttribute = CUresult (*)(const void*, CUpointer_attribute, CUdeviceptr);

struct DriverCalls {
  PointerGetAttributes get = nullptr;
  PointerSetAttribute set = nullptr;
};

// The two driver calls, looked up once in the loaded driver (never loading it: a device buffer
// exists only once it is loaded).
const DriverCalls& driver_calls() {
  static const DriverCalls calls = [] {
    DriverCalls found;
    found.get =
        reinterpret_cast<PointerGetAttributes>(cuda_driver_symbol("cuPointerGetAttributes"));
    found.set = reinterpret_cast<PointerSetAttribute>(cuda_driver_symbol("cuPointerSetAttribute"));
    return found;
  }();
  return calls;
}

// The allocation holding ptr, as the registration cache keys it; false when the driver cannot
// say (the call is then staged).
bool describe_allocation(const void* ptr, int device, BufferMemory* out, std::string* why) {
  const DriverCalls& driver = driver_calls();
  if (driver.get == nullptr) {
    *why = "cuPointerGetAttributes not found in the loaded CUDA driver";
    return false;
  }
  unsigned long long id = 0;
  CUdeviceptr start = 0;
  size_t size = 0;
  int ordinal = -1;
  CUpointer_attribute attributes[] = {CU_POINTER_ATTRIBUTE_BUFFER_ID,
                                      CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                      CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                      CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  void* data[] = {&id, &start, &size, &ordinal};
  const auto address = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
  const CUresult result = driver.get(4, attributes, data, address);
  if (result != CUDA_SUCCESS || id == 0 || start == 0 || size == 0) {
    *why = fmt::format("cuPointerGetAttributes({}) returned {} (buffer id {}, range {:#x} + {})",
                       ptr, static_cast<int>(result), id, static_cast<unsigned long long>(start),
                       size);
    return false;
  }
  if (driver.set != nullptr) {
    const unsigned sync = 1;
    (void)driver.set(&sync, CU_POINTER_ATTRIBUTE_SYNC_MEMOPS, address);  // best effort
  }
  out->space = MemorySpace::Cuda;
  out->device = ordinal >= 0 ? ordinal : device;
  out->base = reinterpret_cast<const void*>(static_cast<uintptr_t>(start));
  out->bytes = size;
  out->id = id;
  return true;
}

// The messages of the call, as the staged path would send them.
struct Messages {
  size_t count = 0;  // of them
  size_t chunk_bytes = 0;  // every one but the last
  size_t total_bytes = 0;
  size_t bytes(size_t k) const { return std::min(chunk_bytes, total_bytes - k * chunk_bytes); }
};

Messages messages_of(const plx_comm* comm, const DeviceArgs& args, size_t count) {
  const size_t elem = plx_datatype_size(args.datatype);
  Messages m;
  m.total_bytes = count * elem;
  if (pipelined(args, count, comm->chunk_bytes)) {
    m.chunk_bytes = staging_chunk_elems(elem, comm->chunk_bytes) * elem;
    m.count = (m.total_bytes + m.chunk_bytes - 1) / m.chunk_bytes;
  } else {
    m.chunk_bytes = m.total_bytes;
    m.count = 1;
  }
  return m;
}

}  // namespace

bool hmem_p2p_eligible(plx_comm* comm, const DeviceArgs& args) {
  if (args.peer < 0 || args.peer >= comm->size || !comm->transport) return false;
  const size_t count = args.send != nullptr ? args.send_count : args.recv_count;
  const size_t elem = plx_datatype_size(args.datatype);
  if (count == 0 || elem == 0 || count > SIZE_MAX / elem) return false;
  return comm->transport->hmem_supported(MemorySpace::Cuda);
}

plx_result_t run_hmem_p2p(const char* fn, plx_comm* comm, int device, const DeviceArgs& args,
                          bool* fell_back) {
  *fell_back = false;
  const bool is_send = args.send != nullptr;
  auto* buf = static_cast<unsigned char*>(is_send ? const_cast<void*>(args.send) : args.recv);
  const size_t count = is_send ? args.send_count : args.recv_count;
  const int peer = args.peer;
  BufferMemory memory;
  std::string why;
  if (!describe_allocation(buf, device, &memory, &why)) {
    log_message(LogLevel::Info, "{}: rank {}: staging instead of FI_HMEM: {}", fn, comm->rank,
                why);
    *fell_back = true;
    return PLX_SUCCESS;
  }
  const Messages m = messages_of(comm, args, count);
  // The tags the staged path would take (c_api_calls.cpp p2p: one per message); the counter
  // moves on only once they are used, so a fallback takes the same ones.
  std::vector<uint64_t>& seq = is_send ? comm->send_seq : comm->recv_seq;
  const uint64_t first_seq = seq[static_cast<size_t>(peer)];
  Transport& transport = *comm->transport;
  bool posted_any = false;
  const plx_result_t result = submit_body(comm, [&]() -> plx_result_t {
    PLX_CHECK(cuda_result(cudaSetDevice(device), fn, comm->rank,
                          "cudaSetDevice on the thread running the call"));
    auto requests = std::make_unique<Request[]>(m.count);
    std::vector<Request*> pointers;
    plx_result_t rc = PLX_SUCCESS;
    for (size_t k = 0; k < m.count && rc == PLX_SUCCESS; ++k) {
      const uint64_t tag = p2p_tag(first_seq + k);
      unsigned char* at = buf + k * m.chunk_bytes;
      rc = is_send ? transport.post_send_hmem(peer, tag, at, m.bytes(k), memory, requests[k])
                   : transport.post_recv_hmem(peer, tag, at, m.bytes(k), memory, requests[k]);
      if (rc == PLX_ERROR_UNSUPPORTED && k == 0 && !transport.hmem_supported(memory.space)) {
        log_message(LogLevel::Info, "{}: rank {}: staging instead of FI_HMEM: {}", fn,
                    comm->rank, last_error());
        clear_error();
        *fell_back = true;
        return PLX_SUCCESS;
      }
      posted_any = true;
      if (rc == PLX_SUCCESS) pointers.push_back(&requests[k]);
    }
    if (rc == PLX_SUCCESS) rc = transport.wait_all(pointers.data(), pointers.size());
    if (rc != PLX_SUCCESS) {
      leak_on_purpose(requests);  // the provider may still write into posted requests
      return rc;
    }
    return cuda_result(cudaStreamSynchronize(cudaStreamLegacy), fn, comm->rank,
                       "waiting for the provider's copies (the legacy default stream)");
  });
  if (!*fell_back && posted_any) {
    seq[static_cast<size_t>(peer)] = first_seq + m.count;
    if (result == PLX_SUCCESS) comm->last_algorithm = is_send ? "send:fi_hmem" : "recv:fi_hmem";
  }
  return result;  // a failure's message is the transport's (rank, peer, bytes)
}

}  // namespace plexus::comm::device
