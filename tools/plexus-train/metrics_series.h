// metrics_series.h - the series plexus-train --plot draws, read back from the run's
// --metrics-file (engine/checkpoint/checkpoint_metrics.h: one JSON object a line, written by
// rank 0: "step", "loss", "lr", "grad_norm", "elapsed_s", "step_s", "tokens_per_s", and
// "val_loss" on validation steps).
//
// A line's "tokens_per_s" is taken as it is. Lines written before the trainer recorded it have
// none, so for them it is derived: a step's tokens/s is tokens_per_step / (its elapsed_s - the
// previous step's elapsed_s). Points where that difference is not one step's time are left out:
// after a gap in the steps, and after a step that ran validation (its pass falls between the two
// elapsed_s readings) unless that would leave fewer than two points. Where elapsed_s drops (a
// resumed run restarted the clock) the step's own elapsed_s is its time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace plexus::train {

struct SeriesPoint {
  int64_t step = 0;
  double value = 0;
};

struct StepSeries {
  std::vector<SeriesPoint> loss;          // every step recorded
  std::vector<SeriesPoint> val_loss;      // the validation steps
  std::vector<SeriesPoint> tokens_per_s;  // see above
};

// Reads `metrics_path`. Lines that are not a JSON object with an integer "step" and a numeric
// "loss" (a line cut by a crash) are skipped. Returns false, with the reason in *why
// ("cannot read 'PATH': <strerror>"), only if the file cannot be opened; *out is written only
// on success. `tokens_per_step` is the global batch times the context length.
bool read_step_series(const std::string& metrics_path, double tokens_per_step, StepSeries* out,
                      std::string* why);

}  // namespace plexus::train
