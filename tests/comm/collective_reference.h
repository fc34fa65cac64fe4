// collective_reference.h - closed-form inputs and expected results of the collective tests
// (algorithms_thread_test on threads, allreduce_test, broadcast_test and collectives_matrix_test
// on real ranks).
//
// Inputs are small integers chosen so that every allreduce result is exact in every datatype,
// whatever order the ranks' contributions are combined in:
//   sum/avg  (7r + 3i) mod 11, minus 5 for signed types and floats: |sum| <= 5n
//   prod     {1, 2, -1} (unsigned: {1, 2, 3}) at (r + 2i) mod 3: |prod| <= 2^n, exact in
//            float16/bfloat16 up to n = 8 (11 and 8 significant bits), wrapping for ints
//   min/max  (5r + 3i) mod 13, minus 6 for signed types and floats
// so the reference needs no tolerance: int8 sums stay within range (n <= 25), float16 and
// bfloat16 hold every integer up to 256 exactly, and PLX_AVG divides once in the datatype's own
// arithmetic (float16/bfloat16 in float32, then rounded to nearest even), as the library does.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "comm/reduce/half.h"
#include "comm/reduce/reduce.h"
#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"

namespace plexus::test {

inline const char* datatype_name(plx_datatype_t dt) {
  static const char* const kNames[] = {"int8",   "uint8",   "int32",    "uint32",  "int64",
                                       "uint64", "float16", "bfloat16", "float32", "float64"};
  return dt >= 0 && dt < PLX_NUM_DATATYPES ? kNames[dt] : "?";
}

inline const char* op_name(plx_red_op_t op) {
  static const char* const kNames[] = {"sum", "prod", "min", "max", "avg"};
  return op >= 0 && op < PLX_NUM_OPS ? kNames[op] : "?";
}

inline bool is_unsigned(plx_datatype_t dt) {
  return dt == PLX_UINT8 || dt == PLX_UINT32 || dt == PLX_UINT64;
}

// Stands for NaN among the small integers the references compute with (floating types only).
constexpr int64_t kNaNInput = INT64_MIN;

inline bool is_floating(plx_datatype_t dt) {
  return dt == PLX_FLOAT16 || dt == PLX_BFLOAT16 || dt == PLX_FLOAT32 || dt == PLX_FLOAT64;
}

// Stores the small integer v as one element of dt (integers wrap modulo 2^bits); kNaNInput as
// the datatype's quiet NaN.
inline void encode(plx_datatype_t dt, int64_t v, unsigned char* p) {
  const auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  if (v == kNaNInput && is_floating(dt)) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    switch (dt) {
      case PLX_FLOAT16: return put(comm::float_to_half(nan));
      case PLX_BFLOAT16: return put(comm::float_to_bf16(nan));
      case PLX_FLOAT32: return put(nan);
      default: return put(std::numeric_limits<double>::quiet_NaN());
    }
  }
  switch (dt) {
    case PLX_INT8: return put(static_cast<int8_t>(v));
    case PLX_UINT8: return put(static_cast<uint8_t>(v));
    case PLX_INT32: return put(static_cast<int32_t>(v));
    case PLX_UINT32: return put(static_cast<uint32_t>(v));
    case PLX_INT64: return put(static_cast<int64_t>(v));
    case PLX_UINT64: return put(static_cast<uint64_t>(v));
    case PLX_FLOAT16: return put(comm::float_to_half(static_cast<float>(v)));
    case PLX_BFLOAT16: return put(comm::float_to_bf16(static_cast<float>(v)));
    case PLX_FLOAT32: return put(static_cast<float>(v));
    default: return put(static_cast<double>(v));
  }
}

// The PLX_AVG element: the sum divided by n in the datatype's own arithmetic.
inline void encode_avg(plx_datatype_t dt, int64_t sum, int n, unsigned char* p) {
  const auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  const float quotient = static_cast<float>(sum) / static_cast<float>(n);
  switch (dt) {
    case PLX_FLOAT16: return put(comm::float_to_half(quotient));
    case PLX_BFLOAT16: return put(comm::float_to_bf16(quotient));
    case PLX_FLOAT32: return put(quotient);
    case PLX_FLOAT64: return put(static_cast<double>(sum) / static_cast<double>(n));
    default: return encode(dt, sum / n, p);  // C++ truncates toward zero, as PLX_AVG does
  }
}

// One element as text, for failure messages.
inline std::string show(plx_datatype_t dt, const unsigned char* p) {
  const auto get = [p](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (dt) {
    case PLX_INT8: return std::to_string(get(int8_t{}));
    case PLX_UINT8: return std::to_string(get(uint8_t{}));
    case PLX_INT32: return std::to_string(get(int32_t{}));
    case PLX_UINT32: return std::to_string(get(uint32_t{}));
    case PLX_INT64: return std::to_string(get(int64_t{}));
    case PLX_UINT64: return std::to_string(get(uint64_t{}));
    case PLX_FLOAT16: return std::to_string(comm::half_to_float(get(uint16_t{})));
    case PLX_BFLOAT16: return std::to_string(comm::bf16_to_float(get(uint16_t{})));
    case PLX_FLOAT32: return std::to_string(get(float{}));
    default: return std::to_string(get(double{}));
  }
}

// Inputs repeat with this period in the index i (see the file comment).
inline size_t input_period(plx_red_op_t op) {
  return op == PLX_SUM || op == PLX_AVG ? 11 : op == PLX_PROD ? 3 : 13;
}

// Allreduce input of rank r at index i.
inline int64_t allreduce_input(plx_red_op_t op, plx_datatype_t dt, int r, size_t i) {
  const bool u = is_unsigned(dt);
  switch (op) {
    case PLX_SUM:
    case PLX_AVG: return static_cast<int64_t>((r * 7 + i * 3) % 11) - (u ? 0 : 5);
    case PLX_PROD: {
      static const int64_t kSigned[] = {1, 2, -1}, kUnsigned[] = {1, 2, 3};
      return (u ? kUnsigned : kSigned)[(r + 2 * i) % 3];
    }
    default: return static_cast<int64_t>((r * 5 + i * 3) % 13) - (u ? 0 : 6);
  }
}

// One period of rank r's input, encoded: element i is pattern[(i % period) * elem].
inline std::vector<unsigned char> input_pattern(plx_red_op_t op, plx_datatype_t dt, int r) {
  const size_t elem = comm::datatype_bytes(dt), period = input_period(op);
  std::vector<unsigned char> pattern(period * elem);
  for (size_t i = 0; i < period; ++i) encode(dt, allreduce_input(op, dt, r, i), &pattern[i * elem]);
  return pattern;
}

// One period of the expected allreduce result over n ranks, encoded like input_pattern.
inline std::vector<unsigned char> expected_pattern(plx_red_op_t op, plx_datatype_t dt, int n) {
  const size_t elem = comm::datatype_bytes(dt), period = input_period(op);
  std::vector<unsigned char> pattern(period * elem);
  for (size_t i = 0; i < period; ++i) {
    int64_t acc = allreduce_input(op, dt, 0, i);
    for (int r = 1; r < n; ++r) {
      const int64_t v = allreduce_input(op, dt, r, i);
      if (op == PLX_PROD)
        acc *= v;
      else if (op == PLX_MIN)
        acc = std::min(acc, v);
      else if (op == PLX_MAX)
        acc = std::max(acc, v);
      else
        acc += v;
    }
    if (op == PLX_AVG)
      encode_avg(dt, acc, n, &pattern[i * elem]);
    else
      encode(dt, acc, &pattern[i * elem]);
  }
  return pattern;
}

// Fills count elements of buf by repeating pattern (whose length is a multiple of elem).
inline void fill_periodic(unsigned char* buf, size_t count, size_t elem,
                          const std::vector<unsigned char>& pattern) {
  const size_t period = pattern.size() / elem;
  for (size_t i = 0; i < count; i += period) {
    std::memcpy(buf + i * elem, pattern.data(), std::min(period, count - i) * elem);
  }
}

// "" if count elements of buf repeat pattern, else "index I: got X, want Y" for the first miss.
inline std::string check_periodic(const unsigned char* buf, size_t count, plx_datatype_t dt,
                                  const std::vector<unsigned char>& pattern) {
  const size_t elem = comm::datatype_bytes(dt), period = pattern.size() / elem;
  for (size_t i = 0; i < count; i += period) {
    const size_t len = std::min(period, count - i);
    if (std::memcmp(buf + i * elem, pattern.data(), len * elem) == 0) continue;
    for (size_t j = 0; j < len; ++j) {
      if (std::memcmp(buf + (i + j) * elem, &pattern[j * elem], elem) != 0) {
        return "index " + std::to_string(i + j) + ": got " + show(dt, buf + (i + j) * elem) +
               ", want " + show(dt, &pattern[j * elem]);
      }
    }
  }
  return "";
}

// The roots the rooted collectives are tested from: 0, n/2 and n-1, without repeats (small n).
inline std::vector<int> roots(int n) {
  std::vector<int> out;
  for (int root : {0, n / 2, n - 1}) {
    if (std::find(out.begin(), out.end(), root) == out.end()) out.push_back(root);
  }
  return out;
}

// Broadcast payload of the root's buffer, one period (101 elements) encoded: element i is
// ((7i + 13 root) mod 101) - 50, which depends on the root so a message from the wrong root shows.
inline std::vector<unsigned char> broadcast_pattern(plx_datatype_t dt, int root) {
  const size_t elem = comm::datatype_bytes(dt), period = 101;
  std::vector<unsigned char> pattern(period * elem);
  for (size_t i = 0; i < period; ++i) {
    encode(dt, static_cast<int64_t>((i * 7 + static_cast<size_t>(root) * 13) % 101) - 50,
           &pattern[i * elem]);
  }
  return pattern;
}

// For forked ranks: creates the world communicator from the environment (tests/support/
// multiprocess.h sets it) and checks its size and that it runs on `provider` (no silent
// fallback to another provider). Returns "" or the reason, with plx_get_last_error().
inline std::string init_world(int n, const char* provider, plx_comm_t* comm) {
  if (plx_comm_init_from_env(comm) != PLX_SUCCESS) {
    return std::string("plx_comm_init_from_env: ") + plx_get_last_error(nullptr);
  }
  int size = 0;
  const char* name = nullptr;
  if (plx_comm_size(*comm, &size) != PLX_SUCCESS || size != n) {
    return "plx_comm_size gave " + std::to_string(size) + ", want " + std::to_string(n);
  }
  if (plx_comm_transport_name(*comm, &name) != PLX_SUCCESS ||
      std::string(name).find(provider) == std::string::npos) {
    return std::string("runs on provider ") + (name ? name : "?") + ", want " + provider;
  }
  return "";
}

// For forked ranks: destroys the communicator and gives the rank's exit code (0 only when the
// destroy succeeded and no case failed).
inline int finish_rank(int rank, plx_comm_t comm, int failures) {
  const plx_result_t rc = plx_comm_destroy(comm);
  if (rc != PLX_SUCCESS) {
    return rank_failure(rank, std::string("plx_comm_destroy: ") + plx_get_error_string(rc));
  }
  return failures == 0 ? 0 : 1;
}

// ---- collectives_matrix_test --------------------------------------------------------------
// The matrix reduces the inputs above at a scrambled index, so they do not repeat with a short
// period (a block shifted by a multiple of 11 would otherwise still compare equal), and moves
// pseudo-random bytes, so a block from the wrong rank, offset or case never compares equal.

// Element g of the matrix's reduction inputs is allreduce_input at this index (24 bits).
inline size_t matrix_scrambled_index(size_t g) {
  return static_cast<size_t>((static_cast<uint64_t>(g) * 0x9E3779B97F4A7C15ull) >> 40);
}

// Rank r's reduction input at global element g (for reduce_scatter, g runs over all n blocks).
// Min and max of the floating types see NaN as well: rank r's input is NaN at about one element
// in 17 (ranks r and r + 4 at the same ones), and plexus.h says the result there is NaN,
// whichever algorithm runs and in whatever order it combines the ranks.
inline int64_t matrix_input(plx_red_op_t op, plx_datatype_t dt, int r, size_t g) {
  const size_t index = matrix_scrambled_index(g);
  if ((op == PLX_MIN || op == PLX_MAX) && is_floating(dt) &&
      index % 17 == static_cast<size_t>(r % 4) + 1) {
    return kNaNInput;
  }
  return allreduce_input(op, dt, r, index);
}

// Encodes rank r's inputs for elements first..first+count-1 into out (count elements of dt).
inline void matrix_fill_input(plx_red_op_t op, plx_datatype_t dt, int r, size_t first, size_t count,
                              unsigned char* out) {
  const size_t elem = comm::datatype_bytes(dt);
  for (size_t i = 0; i < count; ++i) encode(dt, matrix_input(op, dt, r, first + i), out + i * elem);
}

// The serial reference: elements first..first+count-1 of op over ranks 0..n-1 of matrix_input,
// each input multiplied by `scale` first (1, or the scalar of a pre-multiplied sum with op
// PLX_SUM), combined in int64 in rank order and encoded in dt. Exact in every datatype as long
// as |scale| * 5n and |scale| * 10n (unsigned) stay within the datatype's exact integers (256 for
// bfloat16, 127 for int8 sums): the file comment's argument, scaled.
inline void matrix_reference(plx_red_op_t op, int64_t scale, plx_datatype_t dt, int n, size_t first,
                             size_t count, unsigned char* out) {
  const size_t elem = comm::datatype_bytes(dt);
  for (size_t i = 0; i < count; ++i) {
    const size_t g = first + i;
    bool nan = false;  // any rank's NaN makes the result NaN
    for (int r = 0; r < n; ++r) nan = nan || matrix_input(op, dt, r, g) == kNaNInput;
    if (nan) {
      encode(dt, kNaNInput, out + i * elem);
      continue;
    }
    int64_t acc = scale * matrix_input(op, dt, 0, g);
    for (int r = 1; r < n; ++r) {
      const int64_t v = scale * matrix_input(op, dt, r, g);
      if (op == PLX_PROD)
        acc *= v;
      else if (op == PLX_MIN)
        acc = std::min(acc, v);
      else if (op == PLX_MAX)
        acc = std::max(acc, v);
      else
        acc += v;
    }
    if (op == PLX_AVG)
      encode_avg(dt, acc, n, out + i * elem);
    else
      encode(dt, acc, out + i * elem);
  }
}

// Bytes first_byte..first_byte+bytes-1 of the pseudo-random stream `seed` (splitmix64 words,
// little-endian): the payload of the data-moving collectives.
inline void matrix_fill_stream(uint64_t seed, size_t first_byte, size_t bytes, unsigned char* out) {
  const auto word_at = [seed](uint64_t w) {
    uint64_t z = seed + (w + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  };
  const auto byte_at = [&](size_t o) {
    return static_cast<unsigned char>(word_at(o >> 3) >> (8 * (o & 7)));
  };
  size_t k = 0;
  for (; k < bytes && ((first_byte + k) & 7) != 0; ++k) out[k] = byte_at(first_byte + k);
  for (; k + 8 <= bytes; k += 8) {
    uint64_t word = word_at((first_byte + k) >> 3);
    if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
    std::memcpy(out + k, &word, 8);
  }
  for (; k < bytes; ++k) out[k] = byte_at(first_byte + k);
}

// One element's bytes in hex, most significant first ("0x3c00"), for failure messages about
// moved (not computed) data.
inline std::string show_hex(const unsigned char* p, size_t elem) {
  static const char kDigits[] = "0123456789abcdef";
  std::string text = "0x";
  for (size_t b = elem; b-- > 0;) {
    text += kDigits[p[b] >> 4];
    text += kDigits[p[b] & 15];
  }
  return text;
}

// One period of `pattern` (elements of `elem` bytes) starting at element `shift`: element i is
// pattern[(i + shift) % period], the expected values of a block that starts `shift` elements
// into a periodic input (reduce-scatter's block r starts r * count elements in).
inline std::vector<unsigned char> shifted(const std::vector<unsigned char>& pattern, size_t elem,
                                          size_t shift) {
  const size_t period = pattern.size() / elem;
  std::vector<unsigned char> out(pattern.size());
  for (size_t i = 0; i < period; ++i) {
    std::memcpy(&out[i * elem], &pattern[((i + shift) % period) * elem], elem);
  }
  return out;
}

// int64 inputs of the request and completion tests: rank r's element i is (r + 1) * 1000 + i,
// and ramp_sum is their sum over ranks 0..n-1 (exact).
inline std::vector<int64_t> ramp(int rank, size_t count) {
  std::vector<int64_t> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = (rank + 1) * 1000 + static_cast<int64_t>(i);
  return out;
}

inline std::vector<int64_t> ramp_sum(int n, size_t count) {
  std::vector<int64_t> out(count, 0);
  for (int r = 0; r < n; ++r) {
    const auto v = ramp(r, count);
    for (size_t i = 0; i < count; ++i) out[i] += v[i];
  }
  return out;
}

}  // namespace plexus::test
