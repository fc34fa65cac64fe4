#include "tools/plexus-train/metrics_series.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <optional>
#include <utility>

#include <nlohmann/json.hpp>

#include "topology/json_depth.h"

namespace plexus::train {

namespace {

struct Row {
  int64_t step = 0;
  double loss = 0;
  std::optional<double> val_loss;
  std::optional<double> elapsed_s;
  std::optional<double> tokens_per_s;
};

std::optional<double> finite_number(const nlohmann::json& row, const char* key) {
  const auto it = row.find(key);
  if (it == row.end() || !it->is_number()) return std::nullopt;
  const double value = it->get<double>();
  return std::isfinite(value) ? std::optional<double>(value) : std::nullopt;
}

std::optional<Row> parse_row(const std::string& line) {
  if (topology::json_nesting_depth(line) > topology::kMaxJsonDepth) return std::nullopt;
  const nlohmann::json json = nlohmann::json::parse(line, nullptr, false);
  if (json.is_discarded() || !json.is_object()) return std::nullopt;
  const auto step = json.find("step");
  const std::optional<double> loss = finite_number(json, "loss");
  if (step == json.end() || !step->is_number_integer() || !loss) return std::nullopt;
  return Row{step->get<int64_t>(), *loss, finite_number(json, "val_loss"),
             finite_number(json, "elapsed_s"), finite_number(json, "tokens_per_s")};
}

// Tokens/s of rows[i] from the elapsed times (header comment); skip_after_validation leaves
// out a step that follows a validation step.
std::optional<double> derived_tokens_per_s(const std::vector<Row>& rows, size_t i,
                                           double tokens_per_step, bool skip_after_validation) {
  const Row& row = rows[i];
  if (row.tokens_per_s) return row.tokens_per_s;
  if (!row.elapsed_s) return std::nullopt;
  double seconds = *row.elapsed_s;  // the first step of a run: its clock started before it
  if (i > 0) {
    const Row& before = rows[i - 1];
    if (!before.elapsed_s || before.step != row.step - 1) return std::nullopt;
    if (*row.elapsed_s > *before.elapsed_s) {
      if (skip_after_validation && before.val_loss) return std::nullopt;
      seconds = *row.elapsed_s - *before.elapsed_s;
    }
  }
  if (seconds <= 0) return std::nullopt;
  return tokens_per_step / seconds;
}

}  // namespace

bool read_step_series(const std::string& metrics_path, double tokens_per_step, StepSeries* out,
                      std::string* why) {
  std::ifstream in(metrics_path);
  if (!in) {
    *why = "cannot read '" + metrics_path + "': " + std::strerror(errno);
    return false;
  }
  std::vector<Row> rows;
  std::string line;
  while (std::getline(in, line)) {
    if (std::optional<Row> row = parse_row(line)) rows.push_back(*row);
  }
  StepSeries series;
  for (const Row& row : rows) {
    series.loss.push_back({row.step, row.loss});
    if (row.val_loss) series.val_loss.push_back({row.step, *row.val_loss});
  }
  for (const bool skip_after_validation : {true, false}) {
    series.tokens_per_s.clear();
    for (size_t i = 0; i < rows.size(); ++i) {
      if (auto speed = derived_tokens_per_s(rows, i, tokens_per_step, skip_after_validation)) {
        series.tokens_per_s.push_back({rows[i].step, *speed});
      }
    }
    if (series.tokens_per_s.size() >= 2) break;
  }
  *out = std::move(series);
  return true;
}

}  // namespace plexus::train
