// trim.h - text without the blanks around it, as the parsers of PLEXUS_* values take their items.
#pragma once

#include <cctype>
#include <string_view>

namespace plexus {

inline std::string_view trim(std::string_view text) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!text.empty() && space(text.front())) text.remove_prefix(1);
  while (!text.empty() && space(text.back())) text.remove_suffix(1);
  return text;
}

}  // namespace plexus
