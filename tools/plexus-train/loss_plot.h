// loss_plot.h - plexus-train --plot FILE.png: at the end of training, rank 0 draws the run with
// gnuplot, one image of two panels: training and validation loss against step above, tokens/s
// against step below (metrics_series.h says how each is read from the run's metrics), under a
// title naming the placement, the world size, the model and the data file.
//
// Everything happens in a private folder (mkdtemp, mode 0700) made before training starts: the
// run's metrics when it was given no --metrics-file, the data files, the gnuplot script and
// gnuplot's log. gnuplot runs in that folder (gnuplot_process.h) and writes plot.png there, so the
// script holds only fixed relative names; the one user value it holds is the title, as a gnuplot
// single-quoted string with quotes doubled and control characters replaced, printed without
// enhanced-text markup. The image is then copied beside FILE.png and renamed over it: FILE.png is
// either the whole new image or untouched. The folder is removed when the LossPlot goes.
//
// Drawing comes after the training's checkpoints are saved and its exit code is known; a failure
// to draw is reported, never turned into a failed run. What can be checked before training
// is checked then: the name by every rank (start_checks.h: check_plot_name), the folder by rank 0
// once the communicator exists (engine/train/output_checks.h), so every rank stops at once.
#pragma once

#include <sys/stat.h>
#include <time.h>

#include <memory>
#include <string>
#include <utility>

#include "engine/config/options.h"

namespace plexus::train {

class LossPlot {
 public:
  static constexpr int kWidthPixels = 1000;
  static constexpr int kHeightPixels = 700;
  static constexpr double kGnuplotTimeoutS = 60;

  // Makes the private folder in the temporary folder (TMPDIR, else /tmp) for drawing into
  // `png_path` from the run's metrics: *metrics_path, the run's --metrics-file, or, when that is
  // empty, a file in the private folder that *metrics_path is set to. nullptr, with the reason in
  // *why ("cannot create a private folder in 'DIR': <strerror>"), if it cannot.
  static std::unique_ptr<LossPlot> create(const std::string& png_path, std::string* metrics_path,
                                          std::string* why);
  ~LossPlot();  // removes the folder and everything in it
  LossPlot(const LossPlot&) = delete;
  LossPlot& operator=(const LossPlot&) = delete;

  // Draws the steps the run recorded into the PNG. "" on success; otherwise the cause, e.g.
  // "the run recorded no steps" (also when the metrics file is as it was at create(): a run
  // that failed before training must not draw an earlier run's lines), "gnuplot was not found on
  // PATH (...)", "gnuplot exited with status 1: <what it printed>", "cannot rename ... over it:
  // <strerror>". `options` and `world_size` are for the title and tokens per step. Never throws.
  std::string draw(const engine::TrainOptions& options, int world_size) const;

  const std::string& png_path() const { return png_path_; }

 private:
  // What stat() said of the metrics file at create(), to tell whether the run wrote it.
  struct FileStamp {
    bool exists = false;
    dev_t device = 0;
    ino_t inode = 0;
    off_t size = 0;
    timespec modified{};
    bool operator==(const FileStamp& o) const;
  };
  static FileStamp stamp(const std::string& path);

  LossPlot(std::string png_path, std::string folder, std::string metrics_path)
      : png_path_(std::move(png_path)),
        folder_(std::move(folder)),
        metrics_path_(std::move(metrics_path)),
        metrics_before_(stamp(metrics_path_)) {}

  std::string png_path_;
  std::string folder_;
  std::string metrics_path_;
  FileStamp metrics_before_;
};

// `text` as a gnuplot single-quoted string: ' doubled, control characters (a newline would end
// the command) replaced by spaces. Inside single quotes gnuplot expands nothing else.
std::string gnuplot_quoted(const std::string& text);

}  // namespace plexus::train
