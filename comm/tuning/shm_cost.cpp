// shm_cost.cpp - see shm_cost.h.
#include "comm/tuning/shm_cost.h"

#include <algorithm>

#include "comm/tuning/cost_terms.h"

namespace plexus::comm {

double shm_seconds(AlgorithmId algorithm, double bytes, int nranks, double alpha_s,
                   double gamma_s_per_byte, size_t chunk_bytes) {
  const double p = nranks, a = alpha_s, g = gamma_s_per_byte, c = kCopyGamma;
  // The slot is chunk_bytes rounded up to a page (peer_memory.h). Waits are counted per slot's
  // worth: the algorithms cut a slot into pieces of at most kShmPieceBytes (algorithms.h), but
  // the pieces of one slot follow each other with the peers in step, their waits overlapping
  // the copies (measured: 256 KiB pieces faster than whole 1 MiB slots). The one-shot allreduce
  // waits for every piece (each rank reads all of them), so its pieces are counted.
  const size_t slot = chunk_bytes == 0 ? 0 : (chunk_bytes + 4095) / 4096 * 4096;
  const size_t piece = slot;
  const size_t oneshot_piece = std::min(slot, kShmPieceBytes);
  switch (algorithm) {
    case AlgorithmId::AllreduceShm:
    case AlgorithmId::ReduceShm: {
      const double k = slices(bytes, piece);
      return 2 * k * a + (c * (p - 1) / p + c + (p - 1) / p) * bytes * g;
    }
    case AlgorithmId::AllreduceShmOneshot: {
      const double k = slices(bytes, oneshot_piece);
      return k * a + (c + (p - 1)) * bytes * g;
    }
    case AlgorithmId::ReduceScatterShm: {
      const double k = slices(p * bytes, slot);
      return k * a + (c * p + (p - 1)) * bytes * g;
    }
    case AlgorithmId::AllgatherShm: {
      const double k = slices(bytes, piece);
      return k * a + c * p * bytes * g;
    }
    case AlgorithmId::BroadcastShm: {
      const double k = slices(bytes, piece);
      return k * a + c * (bytes + bytes / k) * g;
    }
    case AlgorithmId::AlltoallShm: {
      // bytes: one block; n blocks share a piece, so k = slices of n blocks.
      const double k = slices(p * bytes, piece);
      return k * a + (2 * c * (p - 1) + c) * bytes * g;
    }
    default: return 0;
  }
}

AlgorithmId shm_fallback(AlgorithmId algorithm) {
  switch (algorithm) {
    case AlgorithmId::AllreduceShm: return AlgorithmId::AllreduceRing;
    case AlgorithmId::AllreduceShmOneshot: return AlgorithmId::AllreduceRecursiveDoubling;
    case AlgorithmId::ReduceShm: return AlgorithmId::ReduceRing;
    case AlgorithmId::BroadcastShm: return AlgorithmId::BroadcastScatterAllgather;
    case AlgorithmId::ReduceScatterShm: return AlgorithmId::ReduceScatterRing;
    case AlgorithmId::AllgatherShm: return AlgorithmId::AllgatherRing;
    case AlgorithmId::AlltoallShm: return AlgorithmId::AlltoallPairwise;
    default: return algorithm;
  }
}

}  // namespace plexus::comm
