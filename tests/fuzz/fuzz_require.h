// fuzz_require.h - how a fuzz target reports a broken property: one line on stderr, then abort(),
// which libFuzzer reports as a crash (saving the input) and the corpus replay test as a failure.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace plexus::fuzz {

inline void require(bool ok, std::string_view what, std::string_view detail = {}) {
  if (ok) return;
  const std::string line = "fuzz property broken: " + std::string(what) +
                           (detail.empty() ? "" : " (" + std::string(detail) + ")") + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::abort();
}

}  // namespace plexus::fuzz
