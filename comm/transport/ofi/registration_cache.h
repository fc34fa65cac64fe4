// registration_cache.h - memory registrations (fi_mr_regattr) reused across messages.
//
// A message from or into device memory (FI_HMEM) needs its buffer registered with the domain,
// and registering is slow (EFA pins the pages for the NIC; CUDA memory goes through the
// driver), while training sends the same few buffers again and again. So the transport keeps a
// bounded cache of registrations:
//
//   key      (memory space, device, allocation id, allocation range) of BufferMemory
//   hit      a buffer inside a cached range with the same space, device and id
//   miss     the whole allocation is registered and cached (the least recently used entry is
//            closed once the cache holds more than its capacity); an entry with the same base
//            address but another id (the memory was freed and allocated again) is dropped first
//   id 0     no allocation id known: the buffer alone is registered, for one operation only
//
// An operation holds its Registration (shared_ptr) until it completes, so an evicted entry
// closes only when no posted operation uses it any more. Everything closes with the cache (the
// transport's: plx_comm_destroy). Used by one thread at a time (the transport's).
#pragma once

#include <rdma/fi_domain.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "comm/transport/ofi/ofi_util.h"
#include "comm/transport/transport.h"

namespace plexus::comm::ofi {

// One registered range: the provider's fid_mr (closed on destruction) and its descriptor for
// fi_tsend / fi_trecv. A registration made without a provider (tests) has no fid_mr.
class Registration {
 public:
  Registration(fid_mr* mr, void* desc);
  ~Registration();
  Registration(const Registration&) = delete;
  Registration& operator=(const Registration&) = delete;

  void* desc() const { return desc_; }
  // Gives the fid_mr up without closing it (a failed transport leaks its provider objects).
  void abandon();

  // fid_mr objects Plexus has registered and not yet closed, in this process (tests).
  static size_t open_count();

 private:
  FidPtr<fid_mr> mr_;
  void* desc_ = nullptr;
  static std::atomic<size_t> open_count_;
};

// Registers [base, base + bytes) of `memory` (its space and device); returns a libfabric error
// code (0 on success) and the registration.
using Registrar = std::function<int(const BufferMemory& memory, const void* base, size_t bytes,
                                    std::shared_ptr<Registration>* out)>;

// The Registrar of a libfabric domain: fi_mr_regattr with iface FI_HMEM_SYSTEM (Host) or
// FI_HMEM_CUDA and device.cuda = the ordinal (Cuda), access FI_SEND | FI_RECV, and a requested
// key unique within the domain (ignored by providers that choose keys, FI_MR_PROV_KEY).
Registrar domain_registrar(fid_domain* domain);

struct RegistrationStats {
  uint64_t hits = 0;
  uint64_t misses = 0;     // registrations made (cached or one-shot)
  uint64_t evictions = 0;  // entries dropped: beyond capacity, or replaced by a new allocation
  size_t entries = 0;      // cached now
};

class RegistrationCache {
 public:
  static constexpr size_t kDefaultCapacity = 64;

  RegistrationCache(size_t capacity, Registrar registrar);

  // The registration covering [buf, buf + bytes) of `memory`: cached, or made now. bytes > 0.
  // Returns the registrar's libfabric error code (0 on success); nothing is cached on failure.
  int find(const BufferMemory& memory, const void* buf, size_t bytes,
           std::shared_ptr<Registration>* out);

  const RegistrationStats& stats() const { return stats_; }
  size_t capacity() const { return capacity_; }
  // Closes every cached registration (those still held by operations close when released).
  void clear();
  // Abandons every cached registration (Registration::abandon) and forgets them.
  void abandon_all();

 private:
  struct Entry {
    MemorySpace space;
    int device;
    uint64_t id;
    uintptr_t base;
    size_t bytes;
    uint64_t last_use;
    std::shared_ptr<Registration> registration;
  };

  size_t capacity_;
  Registrar registrar_;
  std::vector<Entry> entries_;
  uint64_t clock_ = 0;
  RegistrationStats stats_;
};

}  // namespace plexus::comm::ofi
