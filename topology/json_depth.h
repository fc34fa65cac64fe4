// json_depth.h - how deeply a JSON text nests, counted before it is parsed.
//
// nlohmann-json parses without recursion but serializes (dump) and compares with it, so a
// document of 100000 nested arrays parses and then overflows the stack in the first dump, e.g.
// the checksum of a checkpoint manifest. Every reader of a JSON file that may come from outside
// (topology files, checkpoint manifests and headers, shard headers, lock files, the cost cache)
// refuses a document nested deeper than kMaxJsonDepth before parsing it. Plexus's own documents
// nest at most 6 levels.
#pragma once

#include <cstddef>
#include <string_view>

namespace plexus::topology {

constexpr int kMaxJsonDepth = 64;

// The deepest nesting of arrays and objects in `text` (0 for a scalar), counting brackets outside
// strings (escapes inside strings are skipped), and stopping as soon as it exceeds `limit`
// (then limit + 1). Linear in the text, no allocation; any text is safe, JSON or not.
int json_nesting_depth(std::string_view text, int limit = kMaxJsonDepth);

}  // namespace plexus::topology
