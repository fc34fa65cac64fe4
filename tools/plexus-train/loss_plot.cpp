#include "tools/plexus-train/loss_plot.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "tools/plexus-train/gnuplot_process.h"
#include "tools/plexus-train/metrics_series.h"
#include "topology/topology_file.h"

namespace plexus::train {

namespace {

namespace fs = std::filesystem;

// The private folder's files, named relative to it (gnuplot runs there).
constexpr const char* kMetricsFile = "metrics.jsonl";
constexpr const char* kLossData = "loss.dat";
constexpr const char* kValidationData = "val.dat";
constexpr const char* kSpeedData = "speed.dat";
constexpr const char* kScript = "plot.gp";
constexpr const char* kLog = "gnuplot.log";
constexpr const char* kImage = "plot.png";

std::string errno_text() { return std::strerror(errno); }

// Writes "step value" lines; false if the file cannot be written.
bool write_points(const std::string& path, const std::vector<SeriesPoint>& points) {
  std::ofstream out(path, std::ios::trunc);
  for (const SeriesPoint& p : points) out << fmt::format("{} {:.9g}\n", p.step, p.value);
  return static_cast<bool>(out.flush());
}

std::string plot_title(const engine::TrainOptions& o, int world_size) {
  const engine::ModelOptions& m = o.model;
  return fmt::format("plexus-train: placement {} on {} rank{}, {} layers x {} dims x {} heads, "
                     "context {}, batch {}, data {}",
                     o.placement, world_size, world_size == 1 ? "" : "s", m.n_layer, m.n_embd,
                     m.n_head, m.seq_len, o.global_batch,
                     fs::path(o.data_path).filename().string());
}

// The script: the terminal (pngcairo where this gnuplot has it), then one panel per series
// group. Only fixed names and numbers, and the quoted title.
std::string plot_script(const StepSeries& s, const std::string& title) {
  const auto [first, last] = std::minmax_element(
      s.loss.begin(), s.loss.end(),
      [](const SeriesPoint& a, const SeriesPoint& b) { return a.step < b.step; });
  const int64_t x0 = first->step == last->step ? first->step - 1 : first->step;
  const int64_t x1 = first->step == last->step ? last->step + 1 : last->step;
  const bool speed = !s.tokens_per_s.empty();
  std::string g = fmt::format(
      "# plexus-train --plot: files are named relative to the working folder\n"
      "if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {{\n"
      "  set terminal pngcairo size {0},{1} noenhanced\n"
      "}} else {{\n"
      "  set terminal png size {0},{1} noenhanced\n"
      "}}\n"
      "set output '{2}'\n"
      "set multiplot layout {3},1 title {4}\n"
      "set grid\n"
      "set lmargin 12\n"
      "set xrange [{5}:{6}]\n"
      "set xlabel 'step'\n"
      "set ylabel 'loss'\n"
      "set key top right\n"
      "plot '{7}' using 1:2 with lines linewidth 1.5 title 'training loss'",
      LossPlot::kWidthPixels, LossPlot::kHeightPixels, kImage, speed ? 2 : 1,
      gnuplot_quoted(title), x0, x1, kLossData);
  if (!s.val_loss.empty()) {
    g += fmt::format(", \\\n     '{}' using 1:2 with linespoints pointtype 7 linewidth 1.5 "
                     "title 'validation loss'",
                     kValidationData);
  }
  g += "\n";
  if (speed) {
    g += fmt::format(
        "set ylabel 'tokens/s'\n"
        "set yrange [0:*]\n"
        "unset key\n"
        "plot '{}' using 1:2 with linespoints pointtype 7 pointsize 0.5 title 'tokens/s'\n",
        kSpeedData);
  }
  g += "unset multiplot\n";
  return g;
}

// Puts gnuplot's image `from` at `to` (topology::write_text_file: a temporary file beside it,
// renamed over it, so `to` is either the whole new image or untouched; a symbolic link, folder
// or device at `to` is refused). "" or the cause.
std::string install_image(const std::string& from, const std::string& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) return "gnuplot wrote no image: " + errno_text();
  const std::string image{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return "cannot read gnuplot's image: " + errno_text();
  if (image.empty()) return "gnuplot wrote an empty image";
  std::string why;
  return topology::write_text_file(to, image, &why) == PLX_SUCCESS ? "" : why;
}

}  // namespace

std::string gnuplot_quoted(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\'') {
      quoted += "''";
    } else if (byte < 0x20 || byte == 0x7f) {
      quoted += ' ';
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

bool LossPlot::FileStamp::operator==(const FileStamp& o) const {
  return exists == o.exists && device == o.device && inode == o.inode && size == o.size &&
         modified.tv_sec == o.modified.tv_sec && modified.tv_nsec == o.modified.tv_nsec;
}

LossPlot::FileStamp LossPlot::stamp(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  return {true, st.st_dev, st.st_ino, st.st_size, st.st_mtim};
}

std::unique_ptr<LossPlot> LossPlot::create(const std::string& png_path, std::string* metrics_path,
                                           std::string* why) {
  std::error_code ec;
  fs::path base = fs::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string folder = (base / "plexus-plot-XXXXXX").string();
  if (::mkdtemp(folder.data()) == nullptr) {
    *why = "cannot create a private folder in '" + base.string() + "': " + errno_text();
    return nullptr;
  }
  if (metrics_path->empty()) *metrics_path = folder + "/" + kMetricsFile;
  return std::unique_ptr<LossPlot>(new LossPlot(png_path, folder, *metrics_path));
}

LossPlot::~LossPlot() {
  std::error_code ignored;
  fs::remove_all(folder_, ignored);
}

std::string LossPlot::draw(const engine::TrainOptions& options, int world_size) const {
  try {
    const FileStamp now = stamp(metrics_path_);
    if (!now.exists || now == metrics_before_) return "the run recorded no steps";
    const double tokens_per_step =
        static_cast<double>(options.global_batch) * options.model.seq_len;
    StepSeries series;
    std::string why;
    if (!read_step_series(metrics_path_, tokens_per_step, &series, &why)) return why;
    if (series.loss.empty()) return "the run recorded no steps";
    const auto in_folder = [&](const char* name) { return folder_ + "/" + name; };
    if (!write_points(in_folder(kLossData), series.loss) ||
        !write_points(in_folder(kValidationData), series.val_loss) ||
        !write_points(in_folder(kSpeedData), series.tokens_per_s)) {
      return "cannot write the plot's data in " + folder_ + ": " + errno_text();
    }
    {
      std::ofstream script(in_folder(kScript), std::ios::trunc);
      script << plot_script(series, plot_title(options, world_size));
      if (!script.flush()) return "cannot write the gnuplot script in " + folder_;
    }
    if (std::string failed = run_gnuplot(folder_, kScript, kLog, kGnuplotTimeoutS);
        !failed.empty()) {
      return failed;
    }
    return install_image(in_folder(kImage), png_path_);
  } catch (const std::exception& e) {  // std::bad_alloc, a filesystem error
    return e.what();
  }
}

}  // namespace plexus::train
