#include "tools/plexus-topo/format.h"

#include <cstdio>

namespace plexus::topo_tool {

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buf[32];
  double tenths = static_cast<double>(static_cast<uint64_t>(value * 10.0 + 0.5)) / 10.0;
  if (tenths == static_cast<double>(static_cast<uint64_t>(tenths)))
    std::snprintf(buf, sizeof(buf), "%llu %s", static_cast<unsigned long long>(tenths),
                  units[unit]);
  else
    std::snprintf(buf, sizeof(buf), "%.1f %s", tenths, units[unit]);
  return buf;
}

std::string format_slices(uint64_t chunk_bytes, uint64_t flat_slice_bytes) {
  std::string text = "slices of " + format_bytes(chunk_bytes);
  if (flat_slice_bytes != chunk_bytes) {
    text += " (" + format_bytes(flat_slice_bytes) +
            " for the flat algorithms across hosts: 1 ms on the network, or 8 latencies if "
            "longer, at least 16 KiB)";
  }
  return text;
}

std::string format_mbit(uint64_t mbit_per_s) {
  if (mbit_per_s % 1000 == 0) return std::to_string(mbit_per_s / 1000) + " Gbit/s";
  return std::to_string(mbit_per_s) + " Mbit/s";
}

std::string format_ranks(const std::vector<int>& ranks) {
  if (ranks.empty()) return "(none)";
  if (ranks.size() == 1) return std::to_string(ranks[0]);
  int stride = ranks[1] - ranks[0];
  bool arithmetic = stride > 0;
  for (size_t i = 1; i < ranks.size() && arithmetic; ++i)
    arithmetic = ranks[i] - ranks[i - 1] == stride;
  if (arithmetic && stride == 1)
    return std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string s;
  if (arithmetic && ranks.size() > 4) {
    for (size_t i = 0; i < 3; ++i) s.append(std::to_string(ranks[i])).append(" ");
    s.append("... ").append(std::to_string(ranks.back()));
    return s.append(" (every ").append(std::to_string(stride)).append(")");
  }
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 16) return s.append(" ... (").append(std::to_string(ranks.size())).append(" in all)");
    if (i) s.append(" ");
    s.append(std::to_string(ranks[i]));
  }
  return s;
}

std::string format_seconds(double seconds) {
  char buf[32];
  const double us = seconds * 1e6;
  if (us < 1000)
    std::snprintf(buf, sizeof(buf), "%.*f us", us < 10 ? 2 : us < 100 ? 1 : 0, us);
  else if (us < 1e6)
    std::snprintf(buf, sizeof(buf), "%.*f ms", us < 1e4 ? 2 : us < 1e5 ? 1 : 0, us / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%.2f s", seconds);
  return buf;
}

std::string format_busbw(double bytes, double seconds, double factor) {
  if (!(seconds > 0)) return "-";
  return format_gbs(bytes / seconds * factor);
}

std::string format_gbs(double bytes_per_second) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", bytes_per_second / 1e9);
  return buf;
}

namespace {

// The code point of the 2-, 3- or 4-byte UTF-8 sequence at text[i] and its length in *bytes,
// or 0 if none starts there.
uint32_t code_point_at(std::string_view text, size_t i, size_t* bytes) {
  const auto at = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(text[k])); };
  const auto continuation = [&](size_t k) { return k < text.size() && (at(k) & 0xc0) == 0x80; };
  if ((at(i) & 0xe0) == 0xc0 && continuation(i + 1)) {
    *bytes = 2;
    return (at(i) & 0x1f) << 6 | (at(i + 1) & 0x3f);
  }
  if ((at(i) & 0xf0) == 0xe0 && continuation(i + 1) && continuation(i + 2)) {
    *bytes = 3;
    return (at(i) & 0x0f) << 12 | (at(i + 1) & 0x3f) << 6 | (at(i + 2) & 0x3f);
  }
  if ((at(i) & 0xf8) == 0xf0 && continuation(i + 1) && continuation(i + 2) &&
      continuation(i + 3)) {
    *bytes = 4;
    return (at(i) & 0x07) << 18 | (at(i + 1) & 0x3f) << 12 | (at(i + 2) & 0x3f) << 6 |
           (at(i + 3) & 0x3f);
  }
  return 0;
}

// Characters that act on a terminal or hide, break or reorder the text around them: the C1
// controls (U+0080..9F; U+009B is a CSI), the bidirectional controls (U+061C, U+200E/F,
// U+202A..E, U+2066..9: Unicode TR #9, misused as in CVE-2021-42574), the line and paragraph
// separators (U+2028/9), and the invisible ones: soft hyphen, combining grapheme joiner, the
// Hangul and Mongolian fillers, zero-width characters and invisible operators (U+200B..D,
// U+2060..4), variation selectors (U+FE00..F, U+E0100..1EF), U+FEFF and the tag characters
// (U+E0000..7F).
bool hides_or_reorders(uint32_t cp) {
  return (cp >= 0x80 && cp <= 0x9f) || cp == 0xad || cp == 0x034f || cp == 0x061c ||
         cp == 0x115f || cp == 0x1160 || cp == 0x17b4 || cp == 0x17b5 || cp == 0x180e ||
         (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202e) ||
         (cp >= 0x2060 && cp <= 0x2064) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0x3164 ||
         (cp >= 0xfe00 && cp <= 0xfe0f) || cp == 0xfeff || cp == 0xffa0 ||
         (cp >= 0xe0000 && cp <= 0xe007f) || (cp >= 0xe0100 && cp <= 0xe01ef);
}

}  // namespace

std::string printable(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    const auto c = static_cast<unsigned char>(ch);
    size_t bytes = 1;
    if (const uint32_t cp = code_point_at(text, i, &bytes); cp != 0 && hides_or_reorders(cp)) {
      char buf[16];
      std::snprintf(buf, sizeof(buf), cp > 0xffff ? "\\U%08x" : "\\u%04x",
                    static_cast<unsigned>(cp));
      out += buf;
      i += bytes - 1;
    } else if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

std::string pci_class_name(uint16_t class_id) {
  switch (class_id) {
    case 0x0200:
      return "Ethernet";
    case 0x0207:
      return "InfiniBand";
    case 0x0300:
      return "VGA";
    case 0x0302:
      return "3D controller";
    case 0x0600:
      return "host bridge";
    case 0x0604:
      return "PCI bridge";
    case 0x0680:
      return "other bridge";
    case 0x0108:
      return "NVMe";
    default:
      break;
  }
  switch (class_id >> 8) {
    case 0x01:
      return "storage";
    case 0x02:
      return "network";
    case 0x03:
      return "display";
    case 0x04:
      return "multimedia";
    case 0x05:
      return "memory";
    case 0x06:
      return "bridge";
    case 0x07:
      return "communication";
    case 0x08:
      return "system";
    case 0x0c:
      return "serial bus";
    case 0x12:
      return "accelerator";
    default:
      return "";
  }
}

}  // namespace plexus::topo_tool
