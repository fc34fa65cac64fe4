// values.h - reading and writing elements of any plx_datatype_t as double, and the names
// nccl-tests uses for datatypes and ops.
//
// All values the benchmark writes are small integers (or their average), which every datatype
// holds exactly, so a double carries them without loss. Storing rounds to nearest even for
// float types (half and bfloat16 through float32) and wraps modulo 2^bits for integer types.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "plexus/plexus.h"

namespace plexus::bench {

double load_element(const void* buffer, size_t index, plx_datatype_t datatype);
void store_element(void* buffer, size_t index, plx_datatype_t datatype, double value);

// value as the datatype holds it: store_element then load_element.
double round_to_datatype(double value, plx_datatype_t datatype);

bool is_float_type(plx_datatype_t datatype);
// 2^-(mantissa bits): half 2^-10, bfloat16 2^-7, float 2^-23, double 2^-52; 0 for integers.
double datatype_epsilon(plx_datatype_t datatype);

// "float", "half", "bfloat16", "int8", ... (nccl-tests names).
const char* datatype_name(plx_datatype_t datatype);
// "sum", "prod", "min", "max", "avg".
const char* op_name(plx_red_op_t op);
// Accept the names above and common aliases (fp32, float32, fp16, float16, bf16, fp64, ...).
std::optional<plx_datatype_t> parse_datatype(std::string_view name);
std::optional<plx_red_op_t> parse_op(std::string_view name);

}  // namespace plexus::bench
