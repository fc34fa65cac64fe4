// algorithms.h - entry points of the collective algorithms, one file each in this folder.
//
// Each takes the communicator's transport and a tag_base that is unique to this collective call
// (its low 32 bits are zero and free for the algorithm's own message indices). Arguments have
// already been validated by the C ABI layer (comm/core/c_api.cpp): buffers are non-null when
// count > 0, datatype/op/root are in range. Counts are elements.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/transport/transport.h"
#include "plexus/plexus.h"

namespace plexus::comm {

// ring_allreduce.cpp: reduce-scatter then allgather around the ring rank -> rank+1, each of the n
// segments cut into slices of at most chunk_bytes and pipelined. In place if send == recv.
plx_result_t ring_allreduce(Transport& transport, uint64_t tag_base, const void* sendbuf,
                            void* recvbuf, size_t count, plx_datatype_t datatype,
                            plx_red_op_t op, size_t chunk_bytes);

// broadcast.cpp: binomial tree below chunk_bytes, pipelined chain above.
plx_result_t broadcast(Transport& transport, uint64_t tag_base, const void* sendbuf,
                       void* recvbuf, size_t count, plx_datatype_t datatype, int root,
                       size_t chunk_bytes);

// dissemination_barrier.cpp: ceil(log2 n) rounds of zero-byte messages.
plx_result_t dissemination_barrier(Transport& transport, uint64_t tag_base);

}  // namespace plexus::comm
