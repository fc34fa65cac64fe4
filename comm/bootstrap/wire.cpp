// wire.cpp - little-endian field encoding for the rendezvous messages.
#include "comm/bootstrap/wire.h"

namespace plexus::bootstrap {

WireWriter& WireWriter::u32(uint32_t value) {
  for (int i = 0; i < 4; ++i) payload_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  return *this;
}

WireWriter& WireWriter::u64(uint64_t value) {
  for (int i = 0; i < 8; ++i) payload_.push_back(static_cast<uint8_t>(value >> (8 * i)));
  return *this;
}

WireWriter& WireWriter::bytes(const uint8_t* data, size_t size) {
  u32(static_cast<uint32_t>(size));
  payload_.insert(payload_.end(), data, data + size);
  return *this;
}

Bytes WireWriter::frame(MessageType type) const {
  Bytes out;
  out.reserve(kHeaderBytes + payload_.size());
  const uint32_t fields[2] = {static_cast<uint32_t>(type), static_cast<uint32_t>(payload_.size())};
  for (uint32_t field : fields) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(field >> (8 * i)));
  }
  out.insert(out.end(), payload_.begin(), payload_.end());
  return out;
}

uint32_t WireReader::u32() {
  if (pos_ + 4 > data_.size()) {
    ok_ = false;
    return 0;
  }
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(data_[pos_ + i]) << (8 * i);
  pos_ += 4;
  return value;
}

uint64_t WireReader::u64() {
  const uint64_t low = u32();
  const uint64_t high = u32();
  return low | (high << 32);
}

Bytes WireReader::bytes() {
  const uint32_t size = u32();
  if (!ok_ || pos_ + size > data_.size()) {
    ok_ = false;
    return {};
  }
  Bytes out(data_.begin() + pos_, data_.begin() + pos_ + size);
  pos_ += size;
  return out;
}

std::string WireReader::text() {
  Bytes raw = bytes();
  return std::string(raw.begin(), raw.end());
}

void parse_header(const uint8_t* header, MessageType* type, uint32_t* payload_bytes) {
  uint32_t fields[2] = {0, 0};
  for (int f = 0; f < 2; ++f) {
    for (int i = 0; i < 4; ++i) fields[f] |= static_cast<uint32_t>(header[4 * f + i]) << (8 * i);
  }
  *type = static_cast<MessageType>(fields[0]);
  *payload_bytes = fields[1];
}

const char* message_type_name(MessageType type) {
  switch (type) {
    case MessageType::Hello: return "HELLO";
    case MessageType::Contribute: return "CONTRIBUTE";
    case MessageType::Table: return "TABLE";
    case MessageType::Lost: return "LOST";
    case MessageType::Goodbye: return "GOODBYE";
    case MessageType::Abort: return "ABORT";
    case MessageType::AllDone: return "ALL_DONE";
    case MessageType::Error: return "ERROR";
    case MessageType::Challenge: return "CHALLENGE";
    case MessageType::Welcome: return "WELCOME";
    case MessageType::CommAbort: return "COMM_ABORT";
  }
  return "UNKNOWN";
}

}  // namespace plexus::bootstrap
