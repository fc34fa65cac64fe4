// fnv1a.h - FNV-1a, 64-bit (Fowler, Noll & Vo; http://www.isthe.com/chongo/tech/comp/fnv/): the
// checksum of every checkpoint file (single-file checkpoints, shard files, manifests). Not a
// cryptographic hash: it catches damage, not forgery.
#pragma once

#include <cstddef>
#include <cstdint>

namespace plexus::engine {

struct Fnv1a {
  uint64_t hash = 0xcbf29ce484222325ULL;
  void update(const void* data, size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t h = hash;
    for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ULL;
    hash = h;
  }
};

}  // namespace plexus::engine
