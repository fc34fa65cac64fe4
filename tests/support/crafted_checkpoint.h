// crafted_checkpoint.h - a single-file checkpoint (engine/checkpoint/checkpoint.h) written byte by
// byte with any header: magic, header length, the header, `floats` zero floats and the FNV-1a
// checksum of everything before it. What a forger writes: it passes the checksum, so only the
// reader's field checks stand between it and the loader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

namespace plexus::test {

inline void write_crafted_checkpoint(const std::string& path, const std::string& header,
                                     size_t floats) {
  std::string bytes = "PLXCKPT1";
  const uint64_t length = header.size();
  bytes.append(reinterpret_cast<const char*>(&length), 8);
  bytes += header;
  bytes.append(floats * sizeof(float), '\0');
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ULL;
  bytes.append(reinterpret_cast<const char*>(&h), 8);
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace plexus::test
