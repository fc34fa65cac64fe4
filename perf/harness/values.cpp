#include "perf/harness/values.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace plexus::bench {
namespace {

// IEEE binary16 <-> binary32, round to nearest even, Inf and NaN preserved.
uint16_t float_to_half(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  const int exponent = static_cast<int>((x >> 23) & 0xff);
  uint32_t mantissa = x & 0x7fffff;
  if (exponent == 0xff) return sign | 0x7c00 | (mantissa != 0 ? 0x200 : 0);
  const int e = exponent - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  int shift = 13;
  uint32_t base = (static_cast<uint32_t>(e) << 10);
  if (e <= 0) {  // a half subnormal: value = m * 2^-24
    if (e < -10) return sign;
    mantissa |= 0x800000;
    shift = 14 - e;
    base = 0;
  }
  uint32_t half = base + (mantissa >> shift);
  const uint32_t rest = mantissa & ((1u << shift) - 1);
  const uint32_t halfway = 1u << (shift - 1);
  if (rest > halfway || (rest == halfway && (half & 1))) ++half;  // may carry into the exponent
  return static_cast<uint16_t>(sign | half);
}

float half_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  const uint32_t mantissa = h & 0x3ff;
  if (exponent == 0) {
    float magnitude = std::ldexp(static_cast<float>(mantissa), -24);
    return sign != 0 ? -magnitude : magnitude;
  }
  uint32_t bits = exponent == 31 ? (sign | 0x7f800000 | (mantissa << 13))
                                 : (sign | ((exponent - 15 + 127) << 23) | (mantissa << 13));
  return std::bit_cast<float>(bits);
}

uint16_t float_to_bfloat16(float f) {
  const uint32_t x = std::bit_cast<uint32_t>(f);
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40);
  return static_cast<uint16_t>((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float bfloat16_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

template <typename T>
T load_as(const void* buffer, size_t index) {
  T value;
  std::memcpy(&value, static_cast<const char*>(buffer) + index * sizeof(T), sizeof(T));
  return value;
}

template <typename T>
void store_as(void* buffer, size_t index, T value) {
  std::memcpy(static_cast<char*>(buffer) + index * sizeof(T), &value, sizeof(T));
}

// Integers wrap modulo 2^bits (C++20 integral conversion), via int64 so -1 becomes all ones.
template <typename T>
T wrap(double value) {
  return static_cast<T>(static_cast<int64_t>(value));
}

}  // namespace

double load_element(const void* buffer, size_t index, plx_datatype_t datatype) {
  switch (datatype) {
    case PLX_INT8: return load_as<int8_t>(buffer, index);
    case PLX_UINT8: return load_as<uint8_t>(buffer, index);
    case PLX_INT32: return load_as<int32_t>(buffer, index);
    case PLX_UINT32: return load_as<uint32_t>(buffer, index);
    case PLX_INT64: return static_cast<double>(load_as<int64_t>(buffer, index));
    case PLX_UINT64: return static_cast<double>(load_as<uint64_t>(buffer, index));
    case PLX_FLOAT16: return half_to_float(load_as<uint16_t>(buffer, index));
    case PLX_BFLOAT16: return bfloat16_to_float(load_as<uint16_t>(buffer, index));
    case PLX_FLOAT32: return load_as<float>(buffer, index);
    case PLX_FLOAT64: return load_as<double>(buffer, index);
    default: return std::nan("");
  }
}

void store_element(void* buffer, size_t index, plx_datatype_t datatype, double value) {
  switch (datatype) {
    case PLX_INT8: return store_as(buffer, index, wrap<int8_t>(value));
    case PLX_UINT8: return store_as(buffer, index, wrap<uint8_t>(value));
    case PLX_INT32: return store_as(buffer, index, wrap<int32_t>(value));
    case PLX_UINT32: return store_as(buffer, index, wrap<uint32_t>(value));
    case PLX_INT64: return store_as(buffer, index, wrap<int64_t>(value));
    case PLX_UINT64: return store_as(buffer, index, wrap<uint64_t>(value));
    case PLX_FLOAT16: return store_as(buffer, index, float_to_half(static_cast<float>(value)));
    case PLX_BFLOAT16:
      return store_as(buffer, index, float_to_bfloat16(static_cast<float>(value)));
    case PLX_FLOAT32: return store_as(buffer, index, static_cast<float>(value));
    case PLX_FLOAT64: return store_as(buffer, index, value);
    default: return;
  }
}

double round_to_datatype(double value, plx_datatype_t datatype) {
  alignas(8) char element[8] = {};
  store_element(element, 0, datatype, value);
  return load_element(element, 0, datatype);
}

bool is_float_type(plx_datatype_t datatype) {
  return datatype == PLX_FLOAT16 || datatype == PLX_BFLOAT16 || datatype == PLX_FLOAT32 ||
         datatype == PLX_FLOAT64;
}

double datatype_epsilon(plx_datatype_t datatype) {
  switch (datatype) {
    case PLX_FLOAT16: return std::ldexp(1.0, -10);
    case PLX_BFLOAT16: return std::ldexp(1.0, -7);
    case PLX_FLOAT32: return std::ldexp(1.0, -23);
    case PLX_FLOAT64: return std::ldexp(1.0, -52);
    default: return 0.0;
  }
}

namespace {

struct Named {
  const char* name;
  int value;
};

constexpr Named kDatatypeNames[] = {
    {"int8", PLX_INT8},        {"uint8", PLX_UINT8},       {"int32", PLX_INT32},
    {"uint32", PLX_UINT32},    {"int64", PLX_INT64},       {"uint64", PLX_UINT64},
    {"half", PLX_FLOAT16},     {"bfloat16", PLX_BFLOAT16}, {"float", PLX_FLOAT32},
    {"double", PLX_FLOAT64},   {"int", PLX_INT32},         {"fp16", PLX_FLOAT16},
    {"float16", PLX_FLOAT16},  {"bf16", PLX_BFLOAT16},     {"fp32", PLX_FLOAT32},
    {"float32", PLX_FLOAT32},  {"fp64", PLX_FLOAT64},      {"float64", PLX_FLOAT64}};

constexpr Named kOpNames[] = {
    {"sum", PLX_SUM}, {"prod", PLX_PROD}, {"min", PLX_MIN}, {"max", PLX_MAX}, {"avg", PLX_AVG}};

}  // namespace

const char* datatype_name(plx_datatype_t datatype) {
  for (const Named& n : kDatatypeNames) {
    if (n.value == datatype) return n.name;  // the first entry per value is the nccl-tests name
  }
  return "unknown";
}

const char* op_name(plx_red_op_t op) {
  for (const Named& n : kOpNames) {
    if (n.value == op) return n.name;
  }
  return "unknown";
}

std::optional<plx_datatype_t> parse_datatype(std::string_view name) {
  for (const Named& n : kDatatypeNames) {
    if (name == n.name) return static_cast<plx_datatype_t>(n.value);
  }
  return std::nullopt;
}

std::optional<plx_red_op_t> parse_op(std::string_view name) {
  for (const Named& n : kOpNames) {
    if (name == n.name) return static_cast<plx_red_op_t>(n.value);
  }
  return std::nullopt;
}

}  // namespace plexus::bench
