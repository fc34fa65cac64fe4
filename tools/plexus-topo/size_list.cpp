// size_list.cpp - see size_list.h.
#include "tools/plexus-topo/size_list.h"

#include <cctype>
#include <charconv>

namespace plexus::topo_tool {

std::vector<uint64_t> geometric_sizes(uint64_t first, uint64_t last, uint64_t factor) {
  std::vector<uint64_t> sizes;
  for (uint64_t s = first; s >= 1 && s <= last && factor >= 2; s *= factor) {
    sizes.push_back(s);
    if (s > last / factor) break;
  }
  return sizes;
}

bool parse_size_list(std::string_view text, std::vector<uint64_t>* out, std::string* error) {
  constexpr uint64_t kMax = uint64_t{1} << 40;
  std::vector<uint64_t> sizes;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view item = text.substr(start, end - start);
    std::string_view digits = item;
    uint64_t scale = 1;
    if (!digits.empty()) {
      switch (std::toupper(static_cast<unsigned char>(digits.back()))) {
        case 'K': scale = uint64_t{1} << 10; break;
        case 'M': scale = uint64_t{1} << 20; break;
        case 'G': scale = uint64_t{1} << 30; break;
        case 'T': scale = uint64_t{1} << 40; break;
        default: break;
      }
      if (scale != 1) digits.remove_suffix(1);
    }
    uint64_t value = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || ptr != digits.data() + digits.size() ||
        value == 0 || value > kMax / scale) {
      *error = "--sizes: \"" + std::string(item) +
               "\" is not a byte count in 1..1T (suffixes K, M, G, T)";
      return false;
    }
    sizes.push_back(value * scale);
    start = end + 1;
  }
  *out = std::move(sizes);
  return true;
}

}  // namespace plexus::topo_tool
