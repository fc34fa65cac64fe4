// wire_messages.h - the payload of each rendezvous message (wire.h) as a struct, with the frame
// that carries it and the parser that reads it back.
//
//   CHALLENGE   {u32 version, 32-byte server nonce}
//   HELLO       {u32 version, i32 rank, i32 nranks, 32-byte client nonce, 32-byte MAC}
//   WELCOME     {32-byte MAC}
//   CONTRIBUTE  {u32 round, bytes}
//   TABLE       {u32 round, u32 n, n x bytes}
//   LOST        {i32 rank, text}
//   ABORT       {text}
//   ERROR       {u32 code, text}
//   COMM_ABORT  {u64 comm id, text}
//
// "bytes" and "text" are a u32 length and that many bytes. A parser takes a payload as it came
// off the socket: it returns false, leaving *out as it was, when a field runs past the end (or a
// TABLE announces more entries than its payload could hold), and ignores bytes after the last
// field; an ERROR whose code is none of plexus.h's results is malformed too. What it allocates
// is bounded by the payload's size. to_frame(m) parses back to m.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "comm/bootstrap/handshake.h"
#include "comm/bootstrap/wire.h"
#include "plexus/plexus.h"

namespace plexus::bootstrap {

struct ChallengeMessage {
  uint32_t version = 0;
  Nonce server_nonce{};
  bool operator==(const ChallengeMessage&) const = default;
};

struct HelloMessage {
  uint32_t version = 0;
  int32_t rank = 0;
  int32_t nranks = 0;
  Nonce client_nonce{};
  Mac mac{};
  bool operator==(const HelloMessage&) const = default;
};

struct WelcomeMessage {
  Mac mac{};
  bool operator==(const WelcomeMessage&) const = default;
};

struct ContributeMessage {
  uint32_t round = 0;
  Bytes data;
  bool operator==(const ContributeMessage&) const = default;
};

struct TableMessage {
  uint32_t round = 0;
  std::vector<Bytes> entries;  // indexed by rank
  bool operator==(const TableMessage&) const = default;
};

struct LostMessage {
  int32_t rank = 0;
  std::string reason;
  bool operator==(const LostMessage&) const = default;
};

struct AbortMessage {
  std::string reason;
  bool operator==(const AbortMessage&) const = default;
};

struct ErrorMessage {
  plx_result_t code = PLX_ERROR_INTERNAL;
  std::string message;
  bool operator==(const ErrorMessage&) const = default;
};

struct CommAbortMessage {
  uint64_t comm_id = 0;
  std::string reason;
  bool operator==(const CommAbortMessage&) const = default;
};

// Header and payload, ready to send.
Bytes to_frame(const ChallengeMessage& m);
Bytes to_frame(const HelloMessage& m);
Bytes to_frame(const WelcomeMessage& m);
Bytes to_frame(const ContributeMessage& m);
Bytes to_frame(const TableMessage& m);
Bytes to_frame(const LostMessage& m);
Bytes to_frame(const AbortMessage& m);
Bytes to_frame(const ErrorMessage& m);
Bytes to_frame(const CommAbortMessage& m);

bool parse_message(const Bytes& payload, ChallengeMessage* out);
bool parse_message(const Bytes& payload, HelloMessage* out);
bool parse_message(const Bytes& payload, WelcomeMessage* out);
bool parse_message(const Bytes& payload, ContributeMessage* out);
bool parse_message(const Bytes& payload, TableMessage* out);
bool parse_message(const Bytes& payload, LostMessage* out);
bool parse_message(const Bytes& payload, AbortMessage* out);
bool parse_message(const Bytes& payload, ErrorMessage* out);
bool parse_message(const Bytes& payload, CommAbortMessage* out);

// The error an ERROR payload reports to the rank: its code and message, except that a code that
// is no error (PLX_SUCCESS, PLX_IN_PROGRESS, or none of plexus.h's results) reports
// PLX_ERROR_INTERNAL with the message, and a payload too short for both fields
// PLX_ERROR_INTERNAL with "".
ErrorMessage reported_error(const Bytes& payload);

}  // namespace plexus::bootstrap
