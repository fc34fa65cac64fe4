#include "topology/pci_bus_id.h"

#include <cstdio>

namespace plexus::topology {

namespace {
// Parses 1..max_digits hex digits of `text` starting at *pos, up to a character not a hex digit.
std::optional<unsigned> hex_field(std::string_view text, size_t* pos, size_t max_digits) {
  unsigned value = 0;
  size_t digits = 0;
  while (*pos < text.size() && digits < max_digits + 1) {
    char c = text[*pos];
    unsigned d;
    if (c >= '0' && c <= '9')
      d = static_cast<unsigned>(c - '0');
    else if (c >= 'a' && c <= 'f')
      d = static_cast<unsigned>(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      d = static_cast<unsigned>(c - 'A' + 10);
    else
      break;
    value = value * 16 + d;
    ++digits;
    ++*pos;
  }
  if (digits == 0 || digits > max_digits) return std::nullopt;
  return value;
}

bool expect(std::string_view text, size_t* pos, char c) {
  if (*pos >= text.size() || text[*pos] != c) return false;
  ++*pos;
  return true;
}
}  // namespace

std::string format_pci_bus_id(unsigned domain, unsigned bus, unsigned device, unsigned function) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%04x:%02x:%02x.%x", domain, bus, device, function);
  return buf;
}

std::optional<std::string> normalize_pci_bus_id(std::string_view text) {
  size_t pos = 0;
  auto domain = hex_field(text, &pos, 8);
  if (!domain || !expect(text, &pos, ':')) return std::nullopt;
  auto bus = hex_field(text, &pos, 2);
  if (!bus || !expect(text, &pos, ':')) return std::nullopt;
  auto device = hex_field(text, &pos, 2);
  if (!device || *device > 0x1f || !expect(text, &pos, '.')) return std::nullopt;
  auto function = hex_field(text, &pos, 1);
  if (!function || *function > 7 || pos != text.size()) return std::nullopt;
  return format_pci_bus_id(*domain, *bus, *device, *function);
}

}  // namespace plexus::topology
