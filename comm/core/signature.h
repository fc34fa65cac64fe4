// signature.h - catching ranks that call the same collective with different arguments.
//
// Before its data moves, every collective compares a 32-byte signature of its arguments (the
// collective, datatype, op, root, count, the algorithm chosen, and the pre-multiply scalar)
// across the ranks: a dissemination all-reduce of the smallest and the largest signature with
// the ranks holding them (ceil(log2 n) rounds; after round j a rank has combined the values of
// the 2^(j+1) ranks before it, so after the last every rank holds the global minimum and
// maximum; min and max are idempotent, so the overlaps of a non-power-of-two n do no harm).
// If min != max, every rank returns PLX_ERROR_MISMATCH with the same message naming both sides,
// and no data message of the collective is sent, so the communicator stays usable.
// Messages use the core's reserved tag indices kTagCoreIndexBase + round.
//
// On a communicator whose ranks all share one peer-memory segment (every rank on one host,
// comm/transport/peer_memory/peer_memory.h) the signatures travel as notes instead: each rank
// posts its own and reads every other (PeerMemory::exchange_notes: one futex wait, no message,
// a fraction of a microsecond when the ranks are in step against 3-4 us for the messages), then
// finds the same minimum and maximum, with the same ranks, as the rounds above would. Every
// collective's check then needs the segment: after a failed wait through it (a timeout, a lost
// peer) every later call fails with that error, as the shm algorithms already did; rebuild
// the communicator. A rank whose PLEXUS_CHECK_ARGS differs is caught by the notes' piece stamps
// (PLX_ERROR_MISMATCH on the ranks that check). On calls of one piece the one-host shm algorithms
// (the one-shot allreduce; broadcast, allgather, reduce-scatter and all-to-all under 256 KiB)
// carry the notes with their own piece instead (NoteCheck, algorithms.h; run_task.cpp's
// check_can_ride), so the check costs no wait of its own there.
//
// A signature also carries, uncompared, whether the rank's buffers are registered for the
// registered shm paths (comm/algorithms/shm_registered.h); compare_signatures ANDs it over the
// ranks, so that every rank skips those paths' handshake alike when some rank is not.
#pragma once

#include <cstdint>
#include <string>

#include "comm/algorithms/algorithms.h"
#include "comm/transport/peer_memory/peer_memory.h"
#include "comm/transport/transport.h"

namespace plexus::comm {

struct Signature {
  uint8_t collective = 0;
  uint8_t datatype = 0;
  uint8_t op = 0;
  uint8_t algorithm = 0;  // the chosen AlgorithmId (comm/tuning/algorithm_id.h)
  int32_t root = 0;
  uint64_t count = 0;
  uint64_t premul_scalar = 0;  // bits of the scalar, 0 when not a pre-multiplied sum
  uint32_t flags = 0;          // kSignaturePremul, kSignatureRefused
  // 1 when this rank's buffers that the registered shm paths would need are registered
  // (CollArgs::registered). Not compared: ranks may differ; the check ANDs it over the ranks.
  uint32_t registered = 0;
};
static_assert(sizeof(Signature) == 32, "the signature travels as 32 bytes");
constexpr uint32_t kSignaturePremul = 1u;   // flags: a pre-multiplied sum
constexpr uint32_t kSignatureRefused = 2u;  // flags: the rank refused its call's arguments

// Describes one side for the mismatch message, e.g. "allreduce(count 100, float32, sum, ring)".
using DescribeSignature = std::string (*)(const Signature&);

// The verdict over every rank's signature, all[i] rank i's (n of them), as compare_signatures
// gives it, on rank `rank`: what a NoteCheck (algorithms.h) riding a one-host call returns.
plx_result_t judge_signatures(const Signature* all, int n, int rank, DescribeSignature describe);

// Collective over the transport's ranks. PLX_ERROR_MISMATCH (message naming both ranks' calls)
// or a transport's or a note's error; PLX_SUCCESS when all signatures are equal (but for
// `registered`), and then *all_registered (when not NULL) tells whether every rank's
// `registered` was 1. `peers`: the communicator's peer memory (NULL: none); used when it spans
// every rank of `transport`, and then on every rank alike (the segment is made or refused by
// all together).
plx_result_t compare_signatures(Transport& transport, uint64_t tag_base, const Signature& mine,
                                DescribeSignature describe, PeerMemory* peers,
                                bool* all_registered = nullptr);

}  // namespace plexus::comm
