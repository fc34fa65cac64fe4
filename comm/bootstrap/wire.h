// wire.h - the messages ranks and the rendezvous server exchange over TCP.
//
// Every message is an 8-byte header (type, payload bytes; little-endian u32 each) and a payload.
// Life of a connection:
//
//   rank -> root   HELLO {version, nonce, rank, nranks}
//   rank -> root   CONTRIBUTE {round, bytes}        round 0: host id; round 1: provider + address;
//                                                   round 2: ready (cost model shared)
//   root -> rank   TABLE {round, n x bytes}         once all n ranks contributed to the round
//   ...            (connection stays open: the liveness channel)
//   root -> rank   LOST {rank, reason}              a peer's connection dropped without GOODBYE
//   rank -> root   GOODBYE | ABORT {reason}         plx_comm_destroy | plx_comm_abort
//   root -> rank   ALL_DONE                         every rank said GOODBYE
//   root -> rank   ERROR {code, message}            rendezvous failed (timeout, disagreement)
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace plexus::bootstrap {

constexpr uint32_t kWireVersion = 1;
constexpr size_t kHeaderBytes = 8;
constexpr uint32_t kMaxPayloadBytes = 64u << 20;

enum class MessageType : uint32_t {
  Hello = 1,
  Contribute = 2,
  Table = 3,
  Lost = 4,
  Goodbye = 5,
  Abort = 6,
  AllDone = 7,
  Error = 8,
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
