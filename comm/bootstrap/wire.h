// wire.h - the messages ranks and the rendezvous server exchange over TCP.
//
// Every message is an 8-byte header (type, payload bytes; little-endian u32 each) and a payload.
// Life of a connection:
//
//   root -> rank   CHALLENGE {version, server nonce}   at once, on every accepted connection
//   rank -> root   HELLO {version, rank, nranks, client nonce, MAC}      see handshake.h
//   root -> rank   WELCOME {MAC}                    the root knows the key too; else ERROR
//   rank -> root   CONTRIBUTE {round, bytes}        round 0: host id; round 1: provider + address;
//                                                   round 2: ready (cost model shared)
//   root -> rank   TABLE {round, n x bytes}         once all n ranks contributed to the round
//   ...            (connection stays open: the liveness channel)
//   root -> rank   LOST {rank, reason}              a peer's connection dropped without GOODBYE
//   rank -> root   GOODBYE | ABORT {reason}         plx_comm_destroy | plx_comm_abort
//   root -> rank   ALL_DONE                         every rank said GOODBYE
//   root -> rank   ERROR {code, message}            rendezvous failed (timeout, disagreement)
//   rank -> root   COMM_ABORT {comm id, reason}     plx_comm_abort of a split communicator
//   root -> rank   COMM_ABORT {comm id, reason}     passed on to every other rank
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::bootstrap {

// 3: the endpoint record carries the rank's NIC (comm/core/communicator.cpp endpoint_record).
constexpr uint32_t kWireVersion = 3;
constexpr size_t kHeaderBytes = 8;
constexpr uint32_t kMaxPayloadBytes = 64u << 20;  // from a rank the root has admitted
// Before admission a connection may send one HELLO of at most this many bytes, and nothing
// else; the root's own messages before WELCOME (CHALLENGE, ERROR) are at most kMaxErrorBytes.
constexpr uint32_t kMaxHelloBytes = 128;
constexpr uint32_t kMaxErrorBytes = 64u << 10;
// The communicator's setup is over once this round's table is out: a rank lost before then
// fails every rank (and every late joiner) with the reason; after it, the others are told LOST.
constexpr uint32_t kLastSetupRound = 2;

enum class MessageType : uint32_t {
  Hello = 1,
  Contribute = 2,
  Table = 3,
  Lost = 4,
  Goodbye = 5,
  Abort = 6,
  AllDone = 7,
  Error = 8,
  Challenge = 9,
  Welcome = 10,
  CommAbort = 11,
};

using Bytes = std::vector<uint8_t>;

// Appends fields to a payload.
class WireWriter {
 public:
  WireWriter& u32(uint32_t value);
  WireWriter& u64(uint64_t value);
  WireWriter& i32(int32_t value) { return u32(static_cast<uint32_t>(value)); }
  WireWriter& bytes(const uint8_t* data, size_t size);  // u32 length, then the bytes
  WireWriter& bytes(const Bytes& data) { return bytes(data.data(), data.size()); }
  template <size_t N>
  WireWriter& fixed(const std::array<uint8_t, N>& data) {  // N raw bytes, no length prefix
    payload_.insert(payload_.end(), data.begin(), data.end());
    return *this;
  }
  WireWriter& text(std::string_view value) {
    return bytes(reinterpret_cast<const uint8_t*>(value.data()), value.size());
  }
  // Header + payload, ready to send.
  Bytes frame(MessageType type) const;

 private:
  Bytes payload_;
};

// Reads fields from a payload; any read past the end sets ok() to false and yields zeros.
class WireReader {
 public:
  explicit WireReader(const Bytes& payload) : data_(payload) {}
  uint32_t u32();
  uint64_t u64();
  int32_t i32() { return static_cast<int32_t>(u32()); }
  Bytes bytes();
  std::string text();
  // Exactly N raw bytes (no length prefix), for nonces and MACs.
  template <size_t N>
  std::array<uint8_t, N> fixed() {
    std::array<uint8_t, N> out{};
    if (pos_ + N > data_.size()) {
      ok_ = false;
      return out;
    }
    std::copy(data_.begin() + pos_, data_.begin() + pos_ + N, out.begin());
    pos_ += N;
    return out;
  }
  bool ok() const { return ok_; }

 private:
  const Bytes& data_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// Splits a received 8-byte header.
void parse_header(const uint8_t* header, MessageType* type, uint32_t* payload_bytes);

const char* message_type_name(MessageType type);

}  // namespace plexus::bootstrap
