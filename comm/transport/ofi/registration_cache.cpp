// registration_cache.cpp - see registration_cache.h.
#include "comm/transport/ofi/registration_cache.h"

#include <sys/uio.h>

#include <algorithm>
#include <utility>

namespace plexus::comm::ofi {

std::atomic<size_t> Registration::open_count_{0};

Registration::Registration(fid_mr* mr, void* desc) : mr_(mr), desc_(desc) {
  if (mr_) open_count_.fetch_add(1);
}

Registration::~Registration() {
  if (mr_) {
    mr_.reset();  // fi_close
    open_count_.fetch_sub(1);
  }
}

void Registration::abandon() {
  if (mr_) {
    (void)mr_.release();
    open_count_.fetch_sub(1);
  }
}

size_t Registration::open_count() { return open_count_.load(); }

Registrar domain_registrar(fid_domain* domain) {
  auto next_key = std::make_shared<uint64_t>(1);
  return [domain, next_key](const BufferMemory& memory, const void* base, size_t bytes,
                            std::shared_ptr<Registration>* out) -> int {
    iovec iov{const_cast<void*>(base), bytes};
    fi_mr_attr attr = {};
    attr.mr_iov = &iov;
    attr.iov_count = 1;
    attr.access = FI_SEND | FI_RECV;
    attr.requested_key = (*next_key)++;
    attr.iface = memory.space == MemorySpace::Cuda ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
    attr.device.reserved = 0;
    if (memory.space == MemorySpace::Cuda) attr.device.cuda = memory.device;
    fid_mr* mr = nullptr;
    const int ret = fi_mr_regattr(domain, &attr, 0, &mr);
    if (ret != 0) return ret;
    *out = std::make_shared<Registration>(mr, fi_mr_desc(mr));
    return 0;
  };
}

RegistrationCache::RegistrationCache(size_t capacity, Registrar registrar)
    : capacity_(std::max<size_t>(capacity, 1)), registrar_(std::move(registrar)) {}

int RegistrationCache::find(const BufferMemory& memory, const void* buf, size_t bytes,
                            std::shared_ptr<Registration>* out) {
  const auto lo = reinterpret_cast<uintptr_t>(buf);
  const uintptr_t hi = lo + bytes;
  if (memory.id != 0) {
    for (Entry& e : entries_) {
      if (e.space == memory.space && e.device == memory.device && e.id == memory.id &&
          e.base <= lo && hi <= e.base + e.bytes) {
        e.last_use = ++clock_;
        ++stats_.hits;
        *out = e.registration;
        return 0;
      }
    }
  }
  // The range to register: the whole allocation when it is known and holds the buffer.
  const auto alloc_lo = reinterpret_cast<uintptr_t>(memory.base);
  const bool whole = memory.id != 0 && memory.base != nullptr && alloc_lo <= lo &&
                     hi <= alloc_lo + memory.bytes;
  const uintptr_t reg_lo = whole ? alloc_lo : lo;
  const size_t reg_bytes = whole ? memory.bytes : bytes;
  std::shared_ptr<Registration> made;
  const int ret = registrar_(memory, reinterpret_cast<const void*>(reg_lo), reg_bytes, &made);
  if (ret != 0) return ret;
  ++stats_.misses;
  *out = made;
  if (memory.id == 0) return 0;  // one operation only

  // The same address range under another id is memory freed since: its registration is stale.
  const auto stale = std::remove_if(entries_.begin(), entries_.end(), [&](const Entry& e) {
    return e.space == memory.space && e.device == memory.device && e.id != memory.id &&
           e.base < reg_lo + reg_bytes && reg_lo < e.base + e.bytes;
  });
  stats_.evictions += static_cast<uint64_t>(entries_.end() - stale);
  entries_.erase(stale, entries_.end());
  entries_.push_back(
      Entry{memory.space, memory.device, memory.id, reg_lo, reg_bytes, ++clock_, std::move(made)});
  while (entries_.size() > capacity_) {
    const auto oldest = std::min_element(
        entries_.begin(), entries_.end(),
        [](const Entry& a, const Entry& b) { return a.last_use < b.last_use; });
    entries_.erase(oldest);
    ++stats_.evictions;
  }
  stats_.entries = entries_.size();
  return 0;
}

void RegistrationCache::clear() {
  entries_.clear();
  stats_.entries = 0;
}

void RegistrationCache::abandon_all() {
  for (Entry& e : entries_) e.registration->abandon();
  clear();
}

}  // namespace plexus::comm::ofi
