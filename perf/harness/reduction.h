// reduction.h - inputs and expected values of the reducing collectives (allreduce, reduce,
// reduce_scatter), shared so all three check the same closed forms.
//
// Input element i of rank r: for prod, rank i%n contributes 1 + i%3 and every other rank 1, so
// the product is 1 + i%3 and no datatype overflows; for the other ops, pattern_value(r, i).
// The expected value folds the same inputs in serial: exact in every datatype for sum, prod, min
// and max; avg is the exact sum divided by n, rounded to the datatype (integers truncate, as
// NCCL). `i` is the index into the send buffer (reduce_scatter's rank r receives the indices
// r * count .. r * count + count - 1).
#pragma once

#include <cstddef>

#include "perf/harness/collective.h"

namespace plexus::bench {

double reduction_input(const CaseParams& p, int rank, size_t i);
double reduction_expected(const CaseParams& p, size_t i);

}  // namespace plexus::bench
