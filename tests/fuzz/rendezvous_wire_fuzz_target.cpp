// rendezvous_wire_fuzz_target.cpp - the fuzzing entry point for what arrives on a rendezvous
// socket (comm/bootstrap/): each message's payload parser (wire_messages.h), the field reader
// under them (WireReader, wire.h) and the unique id (unique_id.h).
//
// Input bytes: [kind byte] then the payload. Kinds 0-8 are the messages CHALLENGE, HELLO,
// WELCOME, CONTRIBUTE, TABLE, LOST, ABORT, ERROR, COMM_ABORT; 9 a plx_unique_id_t (the payload
// cut or zero-padded to its 128 bytes); 10 a reader script ([op count] [ops] [payload]). The
// properties checked (a failure aborts, which the fuzzer reports):
//  - a message parses or is refused, never crashes, hangs or overflows (ASan and UBSan); what it
//    holds is bounded by the payload (a TABLE has at most one entry per 4 bytes);
//  - a parsed message framed again (to_frame) is the header {type, n} and the first n bytes of
//    the payload, and that parses back to the same message;
//  - reported_error() gives an error code (never PLX_SUCCESS or a value outside plexus.h), and
//    the parsed one when the ERROR parses with an error code;
//  - decode_unique_id accepts exactly the ids encode_unique_id writes: an accepted id encodes
//    back to the same 128 bytes, with a port in 1..65535 and an address of 1..64 characters; a
//    refused one is PLX_ERROR_INVALID_ARGUMENT with "unique id is malformed: ...";
//  - WireReader: fields read and written again (WireWriter) give back the bytes read; a read
//    past the end sets ok() false for good and yields zeros.
// The same entry point replays tests/fuzz/corpus/rendezvous_wire/ in ctest
// (corpus_replay_test.cpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "comm/base/error.h"
#include "comm/bootstrap/unique_id.h"
#include "comm/bootstrap/wire.h"
#include "comm/bootstrap/wire_messages.h"
#include "tests/fuzz/fuzz_require.h"

namespace {

using namespace plexus::bootstrap;

using plexus::fuzz::require;

// A parsed message framed again is the header and the payload's first bytes, and parses back.
template <typename Message>
void check_message(MessageType type, const Bytes& payload) {
  Message m;
  if (!parse_message(payload, &m)) return;
  const Bytes frame = to_frame(m);
  require(frame.size() >= kHeaderBytes, "a frame shorter than its header");
  MessageType framed_type;
  uint32_t framed_bytes = 0;
  parse_header(frame.data(), &framed_type, &framed_bytes);
  require(framed_type == type, "to_frame wrote another message type");
  require(framed_bytes == frame.size() - kHeaderBytes, "the header's length is not the payload's");
  require(framed_bytes <= payload.size() &&
              std::equal(frame.begin() + kHeaderBytes, frame.end(), payload.begin()),
          "the message framed again is not what was parsed");
  const Bytes again(frame.begin() + kHeaderBytes, frame.end());
  Message back;
  require(parse_message(again, &back) && back == m, "a framed message does not parse back");
}

void check_error(const Bytes& payload) {
  // A code outside plexus.h would be undefined to hold in plx_result_t: UBSan (enum) reports it.
  const ErrorMessage reported = reported_error(payload);
  require(reported.code != PLX_SUCCESS && reported.code != PLX_IN_PROGRESS,
          "reported_error gave no error code");
  ErrorMessage parsed;
  if (parse_message(payload, &parsed) && parsed.code != PLX_SUCCESS &&
      parsed.code != PLX_IN_PROGRESS) {
    require(reported == parsed, "reported_error differs from the parsed ERROR");
  }
}

void check_table_bound(const Bytes& payload) {
  TableMessage table;
  if (!parse_message(payload, &table)) return;
  require(table.entries.size() <= payload.size() / 4, "a TABLE with more entries than bytes");
}

void check_unique_id(const uint8_t* data, size_t size) {
  plx_unique_id_t id;
  std::memset(&id, 0, sizeof(id));
  std::memcpy(id.internal, data, std::min(size, sizeof(id.internal)));
  RendezvousAddress address;
  const plx_result_t rc = decode_unique_id(id, &address);
  if (rc != PLX_SUCCESS) {
    require(rc == PLX_ERROR_INVALID_ARGUMENT, "a refused unique id is not INVALID_ARGUMENT");
    require(std::string(plexus::last_error()).starts_with("unique id is malformed: "),
            "a refused unique id does not say why");
    return;
  }
  require(address.port >= 1 && address.port <= 65535, "a decoded port out of 1..65535");
  require(!address.host.empty() && address.host.size() <= kMaxAddressChars,
          "a decoded address of the wrong length");
  plx_unique_id_t again;
  encode_unique_id(address, &again);
  require(std::memcmp(&again, &id, sizeof(id)) == 0, "a decoded unique id encodes differently");
}

// Reads fields as the ops say and writes each one again; the writer must hold the bytes read.
// The read that first fails yields zeros (a u64 whose high half failed keeps its low half); after
// it ok() stays false, whatever later reads return.
void check_reader(const uint8_t* data, size_t size) {
  if (size < 1) return;
  const size_t ops = std::min<size_t>(data[0] % 16, size - 1);
  const uint8_t* op = data + 1;
  const Bytes payload(data + 1 + ops, data + size);
  WireReader in(payload);
  WireWriter out;
  for (size_t i = 0; i < ops; ++i) {
    const bool was_ok = in.ok();
    bool zero = true;  // what this read returned is zeros or empty
    switch (op[i] % 5) {
      case 0: {
        const uint32_t v = in.u32();
        zero = v == 0;
        if (in.ok()) out.u32(v);
        break;
      }
      case 1: {
        const uint64_t v = in.u64();
        zero = (v >> 32) == 0;
        if (in.ok()) out.u64(v);
        break;
      }
      case 2: {
        const Bytes v = in.bytes();
        zero = v.empty();
        if (in.ok()) out.bytes(v);
        break;
      }
      case 3: {
        const std::string v = in.text();
        zero = v.empty();
        if (in.ok()) out.text(v);
        break;
      }
      default: {
        const Mac v = in.fixed<kMacBytes>();
        zero = v == Mac{};
        if (in.ok()) out.fixed(v);
        break;
      }
    }
    require(was_ok || !in.ok(), "ok() came back after a failed read");
    require(!was_ok || in.ok() || zero, "the read that failed did not yield zeros");
  }
  if (!in.ok()) return;
  const Bytes frame = out.frame(MessageType::Contribute);
  const size_t written = frame.size() - kHeaderBytes;
  require(written <= payload.size() &&
              std::equal(frame.begin() + kHeaderBytes, frame.end(), payload.begin()),
          "fields read and written again differ from the bytes read");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const uint8_t kind = data[0] % 11;
  const Bytes payload(data + 1, data + size);
  switch (kind) {
    case 0: check_message<ChallengeMessage>(MessageType::Challenge, payload); break;
    case 1: check_message<HelloMessage>(MessageType::Hello, payload); break;
    case 2: check_message<WelcomeMessage>(MessageType::Welcome, payload); break;
    case 3: check_message<ContributeMessage>(MessageType::Contribute, payload); break;
    case 4:
      check_message<TableMessage>(MessageType::Table, payload);
      check_table_bound(payload);
      break;
    case 5: check_message<LostMessage>(MessageType::Lost, payload); break;
    case 6: check_message<AbortMessage>(MessageType::Abort, payload); break;
    case 7:
      check_message<ErrorMessage>(MessageType::Error, payload);
      check_error(payload);
      break;
    case 8: check_message<CommAbortMessage>(MessageType::CommAbort, payload); break;
    case 9: check_unique_id(data + 1, size - 1); break;
    default: check_reader(data + 1, size - 1); break;
  }
  return 0;
}
