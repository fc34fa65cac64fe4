// wire_messages.cpp - framing and parsing of each rendezvous message (see wire_messages.h).
#include "comm/bootstrap/wire_messages.h"

#include <utility>

namespace plexus::bootstrap {

namespace {

// Whether a code from the wire is one of plexus.h's results (a cast of any other value to
// plx_result_t would be undefined).
bool known_result(uint32_t code) {
  switch (code) {
    case PLX_SUCCESS:
    case PLX_ERROR_INVALID_ARGUMENT:
    case PLX_ERROR_INVALID_USAGE:
    case PLX_ERROR_UNSUPPORTED:
    case PLX_IN_PROGRESS:
    case PLX_ERROR_MISMATCH:
    case PLX_ERROR_REMOTE:
    case PLX_ERROR_TIMEOUT:
    case PLX_ERROR_TRANSPORT:
    case PLX_ERROR_ABORTED:
    case PLX_ERROR_SYSTEM:
    case PLX_ERROR_INTERNAL:
      return true;
  }
  return false;
}

}  // namespace

Bytes to_frame(const ChallengeMessage& m) {
  return WireWriter().u32(m.version).fixed(m.server_nonce).frame(MessageType::Challenge);
}

Bytes to_frame(const HelloMessage& m) {
  WireWriter out;
  out.u32(m.version).i32(m.rank).i32(m.nranks).fixed(m.client_nonce).fixed(m.mac);
  return out.frame(MessageType::Hello);
}

Bytes to_frame(const WelcomeMessage& m) {
  return WireWriter().fixed(m.mac).frame(MessageType::Welcome);
}

Bytes to_frame(const ContributeMessage& m) {
  return WireWriter().u32(m.round).bytes(m.data).frame(MessageType::Contribute);
}

Bytes to_frame(const TableMessage& m) {
  WireWriter out;
  out.u32(m.round).u32(static_cast<uint32_t>(m.entries.size()));
  for (const Bytes& entry : m.entries) out.bytes(entry);
  return out.frame(MessageType::Table);
}

Bytes to_frame(const LostMessage& m) {
  return WireWriter().i32(m.rank).text(m.reason).frame(MessageType::Lost);
}

Bytes to_frame(const AbortMessage& m) {
  return WireWriter().text(m.reason).frame(MessageType::Abort);
}

Bytes to_frame(const ErrorMessage& m) {
  return WireWriter().u32(static_cast<uint32_t>(m.code)).text(m.message).frame(MessageType::Error);
}

Bytes to_frame(const CommAbortMessage& m) {
  return WireWriter().u64(m.comm_id).text(m.reason).frame(MessageType::CommAbort);
}

bool parse_message(const Bytes& payload, ChallengeMessage* out) {
  WireReader in(payload);
  ChallengeMessage m;
  m.version = in.u32();
  m.server_nonce = in.fixed<kNonceBytes>();
  if (!in.ok()) return false;
  *out = m;
  return true;
}

bool parse_message(const Bytes& payload, HelloMessage* out) {
  WireReader in(payload);
  HelloMessage m;
  m.version = in.u32();
  m.rank = in.i32();
  m.nranks = in.i32();
  m.client_nonce = in.fixed<kNonceBytes>();
  m.mac = in.fixed<kMacBytes>();
  if (!in.ok()) return false;
  *out = m;
  return true;
}

bool parse_message(const Bytes& payload, WelcomeMessage* out) {
  WireReader in(payload);
  WelcomeMessage m;
  m.mac = in.fixed<kMacBytes>();
  if (!in.ok()) return false;
  *out = m;
  return true;
}

bool parse_message(const Bytes& payload, ContributeMessage* out) {
  WireReader in(payload);
  ContributeMessage m;
  m.round = in.u32();
  m.data = in.bytes();
  if (!in.ok()) return false;
  *out = std::move(m);
  return true;
}

bool parse_message(const Bytes& payload, TableMessage* out) {
  WireReader in(payload);
  TableMessage m;
  m.round = in.u32();
  const uint32_t n = in.u32();
  // Every entry takes at least its 4-byte length: a larger count is refused before anything is
  // sized by it.
  if (!in.ok() || n > (payload.size() - 8) / 4) return false;
  m.entries.reserve(n);
  for (uint32_t i = 0; i < n && in.ok(); ++i) m.entries.push_back(in.bytes());
  if (!in.ok()) return false;
  *out = std::move(m);
  return true;
}

bool parse_message(const Bytes& payload, LostMessage* out) {
  WireReader in(payload);
  LostMessage m;
  m.rank = in.i32();
  m.reason = in.text();
  if (!in.ok()) return false;
  *out = std::move(m);
  return true;
}

bool parse_message(const Bytes& payload, AbortMessage* out) {
  WireReader in(payload);
  AbortMessage m;
  m.reason = in.text();
  if (!in.ok()) return false;
  *out = std::move(m);
  return true;
}

bool parse_message(const Bytes& payload, ErrorMessage* out) {
  WireReader in(payload);
  const uint32_t code = in.u32();
  std::string message = in.text();
  if (!in.ok() || !known_result(code)) return false;
  *out = ErrorMessage{static_cast<plx_result_t>(code), std::move(message)};
  return true;
}

bool parse_message(const Bytes& payload, CommAbortMessage* out) {
  WireReader in(payload);
  CommAbortMessage m;
  m.comm_id = in.u64();
  m.reason = in.text();
  if (!in.ok()) return false;
  *out = std::move(m);
  return true;
}

ErrorMessage reported_error(const Bytes& payload) {
  WireReader in(payload);
  const uint32_t code = in.u32();
  std::string message = in.text();
  if (!in.ok()) return ErrorMessage{PLX_ERROR_INTERNAL, ""};
  if (!known_result(code) || code == PLX_SUCCESS || code == PLX_IN_PROGRESS) {
    return ErrorMessage{PLX_ERROR_INTERNAL, message};
  }
  return ErrorMessage{static_cast<plx_result_t>(code), std::move(message)};
}

}  // namespace plexus::bootstrap
