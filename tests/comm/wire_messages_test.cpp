// wire_messages_test.cpp - the rendezvous messages' framing and parsing
// (comm/bootstrap/wire_messages.h): each message framed and parsed back, payloads cut short,
// a TABLE claiming more entries than it holds, and ERROR codes that are no error.
// tests/fuzz/rendezvous_wire_fuzz_target.cpp checks the same properties on random bytes.
#include "comm/bootstrap/wire_messages.h"

#include <gtest/gtest.h>

namespace plexus::bootstrap {
namespace {

// The payload of a frame (its bytes after the 8-byte header), checking the header says so.
Bytes payload_of(const Bytes& frame, MessageType type) {
  MessageType framed;
  uint32_t bytes = 0;
  parse_header(frame.data(), &framed, &bytes);
  EXPECT_EQ(framed, type);
  EXPECT_EQ(bytes, frame.size() - kHeaderBytes);
  return Bytes(frame.begin() + kHeaderBytes, frame.end());
}

Nonce counting_bytes(uint8_t first) {
  Nonce n{};
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<uint8_t>(first + i);
  return n;
}

template <typename Message>
void expect_round_trip(const Message& m, MessageType type) {
  const Bytes payload = payload_of(to_frame(m), type);
  Message back;
  ASSERT_TRUE(parse_message(payload, &back)) << message_type_name(type);
  EXPECT_EQ(back, m) << message_type_name(type);
  // Every shorter payload is refused and leaves the output alone.
  for (size_t cut = 0; cut < payload.size(); ++cut) {
    Message untouched = m;
    EXPECT_FALSE(parse_message(Bytes(payload.begin(), payload.begin() + cut), &untouched))
        << message_type_name(type) << " cut to " << cut << " bytes";
    EXPECT_EQ(untouched, m);
  }
}

TEST(WireMessages, EachMessageParsesBackAndRefusesEveryShorterPayload) {
  expect_round_trip(ChallengeMessage{kWireVersion, counting_bytes(1)}, MessageType::Challenge);
  expect_round_trip(HelloMessage{kWireVersion, 3, 8, counting_bytes(7), counting_bytes(200)},
                    MessageType::Hello);
  expect_round_trip(WelcomeMessage{counting_bytes(9)}, MessageType::Welcome);
  expect_round_trip(ContributeMessage{2, {1, 2, 3}}, MessageType::Contribute);
  expect_round_trip(TableMessage{1, {{'a'}, {}, {'b', 'c'}}}, MessageType::Table);
  expect_round_trip(LostMessage{5, "connection closed"}, MessageType::Lost);
  expect_round_trip(AbortMessage{"failed while creating its communicator"}, MessageType::Abort);
  expect_round_trip(ErrorMessage{PLX_ERROR_TIMEOUT, "only 1 of 2 ranks joined"},
                    MessageType::Error);
  expect_round_trip(CommAbortMessage{0x1234abcd5678ef00ull, "rank 0 aborted"},
                    MessageType::CommAbort);
}

TEST(WireMessages, TrailingBytesAreIgnored) {
  Bytes payload = payload_of(to_frame(LostMessage{2, "gone"}), MessageType::Lost);
  payload.push_back(0xff);
  LostMessage lost;
  ASSERT_TRUE(parse_message(payload, &lost));
  EXPECT_EQ(lost.rank, 2);
  EXPECT_EQ(lost.reason, "gone");
}

TEST(WireMessages, TableClaimingMoreEntriesThanItsBytesIsRefused) {
  // round 0, n = 2^32 - 1, then one empty entry: four bytes could hold one entry, not 2^32 - 1.
  const Bytes payload = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0};
  TableMessage table;
  EXPECT_FALSE(parse_message(payload, &table));
  EXPECT_TRUE(table.entries.empty());
  // Two entries announced, one present.
  const Bytes short_table = {0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_FALSE(parse_message(short_table, &table));
}

TEST(WireMessages, ErrorsThatAreNoErrorReportAsInternal) {
  const auto payload = [](uint32_t code) {
    return payload_of(WireWriter().u32(code).text("why").frame(MessageType::Error),
                      MessageType::Error);
  };
  ErrorMessage parsed;
  EXPECT_FALSE(parse_message(payload(1000), &parsed)) << "1000 is none of plexus.h's results";
  EXPECT_EQ(reported_error(payload(1000)), (ErrorMessage{PLX_ERROR_INTERNAL, "why"}));
  EXPECT_EQ(reported_error(payload(PLX_SUCCESS)), (ErrorMessage{PLX_ERROR_INTERNAL, "why"}));
  EXPECT_EQ(reported_error(payload(PLX_IN_PROGRESS)), (ErrorMessage{PLX_ERROR_INTERNAL, "why"}));
  EXPECT_EQ(reported_error(payload(PLX_ERROR_REMOTE)), (ErrorMessage{PLX_ERROR_REMOTE, "why"}));
  EXPECT_EQ(reported_error(Bytes{11, 0, 0}), (ErrorMessage{PLX_ERROR_INTERNAL, ""}));
}

}  // namespace
}  // namespace plexus::bootstrap
