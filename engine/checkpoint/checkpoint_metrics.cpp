#include "engine/checkpoint/checkpoint_metrics.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "topology/json_depth.h"
#include "topology/output_path.h"

namespace plexus::engine {

namespace {

std::invalid_argument cannot(const std::string& path, const std::string& why) {
  return std::invalid_argument("cannot write --metrics-file '" + path + "': " + why);
}

// The step a metrics line is for, or -1 if it is not a complete line of this format.
int64_t line_step(const std::string& line) {
  if (topology::json_nesting_depth(line) > topology::kMaxJsonDepth) return -1;
  const nlohmann::json row = nlohmann::json::parse(line, nullptr, false);
  if (row.is_discarded() || !row.is_object() || !row.contains("step")) return -1;
  const nlohmann::json& step = row.at("step");
  return step.is_number_integer() ? step.get<int64_t>() : -1;
}

// Rewrites path with the lines of steps <= last (a missing file is an empty one).
void keep_steps_up_to(const std::string& path, int64_t last) {
  std::string kept;
  {
    std::ifstream in(path);
    if (!in) {
      if (errno == ENOENT) return;
      throw cannot(path, std::string("read it to resume: ") + std::strerror(errno));
    }
    std::string line;
    while (std::getline(in, line)) {
      const int64_t step = line_step(line);
      if (step >= 1 && step <= last) kept += line + "\n";
    }
  }
  if (std::string why = topology::replace_target_problem(path); !why.empty()) throw cannot(path, why);
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << kept;
    if (!out.flush()) {
      std::remove(temporary.c_str());
      throw cannot(path, "write " + temporary);
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(temporary.c_str());
    throw cannot(path, "rename " + temporary + " over it: " + why);
  }
}

}  // namespace

std::unique_ptr<std::ofstream> open_metrics_file(const std::string& path,
                                                 std::optional<int64_t> resumed_step) {
  if (resumed_step) keep_steps_up_to(path, *resumed_step);
  errno = 0;
  auto out = std::make_unique<std::ofstream>(
      path, resumed_step ? std::ios::app : std::ios::trunc | std::ios::out);
  if (!*out) throw cannot(path, errno != 0 ? std::strerror(errno) : "open failed");
  return out;
}

}  // namespace plexus::engine
