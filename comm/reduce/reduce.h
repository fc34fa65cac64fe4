// reduce.h - element-wise reduction kernels for every plx_datatype_t and plx_red_op_t.
//
// These are the arithmetic of the collectives: ring allreduce calls reduce_copy on its first
// reduce-scatter step (out of place), reduce_into on the others, and divide_by for PLX_AVG;
// scale_by scales the input of a pre-multiplied sum.
// Semantics, identical for every kernel:
//  - Counts are elements of `datatype`; buffers hold `count` elements each.
//  - PLX_AVG reduces as PLX_SUM; the caller divides the final sum once with divide_by.
//  - Integer SUM and PROD wrap modulo 2^bits (two's complement for signed types), never UB.
//  - FLOAT16/BFLOAT16 are widened to float32, combined, and rounded back once per element per
//    call (round to nearest even). Float SUM/PROD propagate NaN and Inf as IEEE says; MIN/MAX
//    with a NaN operand return one of the two operands (which one is unspecified).
//  - dst may equal a source exactly; other overlaps are not allowed.
// Arguments are not validated here (the C ABI does it): datatype and op must be in range.
#pragma once

#include <cstddef>

#include "plexus/plexus.h"

namespace plexus::comm {

// Bytes of one element of datatype, or 0 if datatype is out of range.
constexpr size_t datatype_bytes(plx_datatype_t datatype) {
  switch (datatype) {
    case PLX_INT8:
    case PLX_UINT8: return 1;
    case PLX_FLOAT16:
    case PLX_BFLOAT16: return 2;
    case PLX_INT32:
    case PLX_UINT32:
    case PLX_FLOAT32: return 4;
    case PLX_INT64:
    case PLX_UINT64:
    case PLX_FLOAT64: return 8;
    default: return 0;
  }
}

// dst[i] = dst[i] op src[i] for i in 0..count-1.
void reduce_into(void* dst, const void* src, size_t count, plx_datatype_t datatype,
                 plx_red_op_t op);

// dst[i] = a[i] op b[i] for i in 0..count-1 (dst may be a or b).
void reduce_copy(void* dst, const void* a, const void* b, size_t count, plx_datatype_t datatype,
                 plx_red_op_t op);

// buf[i] = buf[i] / divisor for i in 0..count-1: the second half of PLX_AVG. Integer types
// truncate toward zero (C++ division); floats divide in their own precision (half types in
// float32, rounded once). divisor >= 1.
void divide_by(void* buf, size_t count, plx_datatype_t datatype, size_t divisor);

// dst[i] = src[i] * scalar for i in 0..count-1, where scalar points to one element of datatype:
// the input scaling of NCCL's pre-multiplied sum (ncclRedOpCreatePreMulSum), which the C ABI
// applies before running PLX_SUM. Integers wrap modulo 2^bits; float16/bfloat16 multiply in
// float32 and round once to nearest even; float32/float64 multiply in their own precision.
// dst may equal src exactly; other overlaps are not allowed.
void scale_by(void* dst, const void* src, size_t count, plx_datatype_t datatype,
              const void* scalar);

// Which instruction set the kernels dispatched to on this CPU: "avx512f", "avx2" or "default".
const char* reduce_isa();

}  // namespace plexus::comm
