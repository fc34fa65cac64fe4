// tag.h - how the 64 bits of a message tag are shared between the layers.
//
//   bits  0..23  message index within one call, chosen by the algorithm (< kTagIndexLimit);
//                indices kTagIndexLimit..2^24-1 are reserved for the core (argument signatures)
//   bits 24..43  sequence number of the call on its communicator, modulo 2^20; for
//                point-to-point messages (bit 44 set) the number of the message between the
//                two ranks in that direction, so sends and receives match in posting order
//   bit  44      1 for point-to-point (plx_send/plx_recv) messages, 0 for collectives
//   bits 45..55  zero
//   bits 56..63  the transport's own (libfabric numbers the parts of a split message here; UCX
//                puts the sender's rank in bits 45..63 instead, since UCX tags carry no source)
//
// Each communicator owns its own transport endpoint, so tags never cross communicators.
#pragma once

#include <cstdint>

namespace plexus::comm {

constexpr int kTagIndexBits = 24;
constexpr uint64_t kTagIndexLimit = (uint64_t{1} << kTagIndexBits) - 256;
constexpr uint64_t kTagCoreIndexBase = kTagIndexLimit;  // 256 indices for the core
constexpr int kTagSeqShift = 24;
constexpr int kTagSeqBits = 20;
constexpr uint64_t kTagSeqMask = (uint64_t{1} << kTagSeqBits) - 1;
constexpr uint64_t kTagP2PBit = uint64_t{1} << 44;
constexpr int kTagUserBits = 45;  // bits 0..44 may be set by layers above the transport

// Tag base of collective call number `seq` on a communicator.
constexpr uint64_t collective_tag_base(uint64_t seq) {
  return (seq & kTagSeqMask) << kTagSeqShift;
}
// Tag of the message number `seq` from one rank to another through plx_send/plx_recv.
constexpr uint64_t p2p_tag(uint64_t seq) {
  return kTagP2PBit | ((seq & kTagSeqMask) << kTagSeqShift);
}

}  // namespace plexus::comm
