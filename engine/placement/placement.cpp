#include "engine/placement/placement.h"

#include <algorithm>
#include <cctype>
#include <climits>

namespace plexus::engine {

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : text_(text) {}

  Placement parse() {
    Placement p;
    p.text = text_;
    if (text_.empty()) fail(0, "a layout (cluster, spread, or axes such as D4 or D2P2T2)");
    parse_layout(p);
    std::vector<size_t> starts;  // of each plugin's name
    while (pos_ < text_.size()) {
      expect('+', "'+' followed by a plugin name, or the end");
      starts.push_back(pos_);
      p.plugins.push_back(parse_plugin());
      check_not_repeated(p.plugins, starts);
    }
    return p;
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& expected) const {
    std::string found = at < text_.size() ? "'" + std::string(1, text_[at]) + "'" : "end of string";
    throw PlacementError("placement '" + text_ + "': unexpected " + found + " at position " +
                         std::to_string(at + 1) + "; expected " + expected);
  }

  bool starts_with_word(const char* word) const {
    return text_.compare(pos_, std::string(word).size(), word) == 0;
  }

  void expect(char c, const std::string& expected) {
    if (pos_ >= text_.size() || text_[pos_] != c) fail(pos_, expected);
    ++pos_;
  }

  void parse_layout(Placement& p) {
    for (const char* word : {"cluster", "spread"}) {
      if (starts_with_word(word)) {
        pos_ += std::string(word).size();
        const char* order = word[0] == 'c' ? "DPT" : "TPD";
        for (int i = 0; i < 3; ++i) p.axes.push_back(Axis{order[i], 0, false});
        return;
      }
    }
    std::string seen;
    while (pos_ < text_.size() && text_[pos_] != '+') {
      char c = text_[pos_];
      if (c != 'D' && c != 'P' && c != 'T') {
        fail(pos_, p.axes.empty() ? "a layout: 'cluster', 'spread' or an axis letter D, P or T"
                                  : "an axis letter D, P or T, a degree, '+' or the end");
      }
      if (seen.find(c) != std::string::npos) {
        fail(pos_, std::string("each axis at most once (") + c + " is repeated)");
      }
      seen += c;
      ++pos_;
      p.axes.push_back(Axis{c, parse_degree(), true});
    }
    if (p.axes.empty()) fail(pos_, "a layout (cluster, spread, or axes such as D4)");
  }

  int parse_degree() {
    size_t start = pos_;
    long long value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      value = value * 10 + (text_[pos_] - '0');
      if (value > INT_MAX) fail(start, "a degree of at most " + std::to_string(INT_MAX));
      ++pos_;
    }
    if (pos_ > start && value == 0) fail(start, "a degree of at least 1");
    return static_cast<int>(value);
  }

  PluginSpec parse_plugin() {
    PluginSpec spec;
    size_t start = pos_;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '_' || text_[pos_] == '-')) {
      ++pos_;
    }
    if (pos_ == start) fail(pos_, "a plugin name (letters, digits, '_' or '-')");
    spec.name = text_.substr(start, pos_ - start);
    if (pos_ < text_.size() && text_[pos_] == '(') {
      ++pos_;
      while (true) {
        size_t arg_start = pos_;
        while (pos_ < text_.size() && text_[pos_] != ',' && text_[pos_] != ')' &&
               text_[pos_] != '(' && text_[pos_] != '+') {
          ++pos_;
        }
        if (pos_ == arg_start) fail(pos_, "an argument for plugin '" + spec.name + "'");
        spec.args.push_back(text_.substr(arg_start, pos_ - arg_start));
        if (pos_ < text_.size() && text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        expect(')', "',' or ')' closing the arguments of plugin '" + spec.name + "'");
        break;
      }
    }
    return spec;
  }

  // A plugin once: the same name twice, or two of one family (names that differ only in a
  // trailing number, as the ZeRO stages zero1, zero2, zero3), is refused at the second.
  void check_not_repeated(const std::vector<PluginSpec>& plugins,
                          const std::vector<size_t>& starts) const {
    const std::string& added = plugins.back().name;
    for (size_t i = 0; i + 1 < plugins.size(); ++i) {
      const std::string& earlier = plugins[i].name;
      if (earlier == added) {
        throw PlacementError("placement '" + text_ + "': plugin '" + added + "' at position " +
                             std::to_string(starts.back() + 1) + " is given twice (also at " +
                             "position " + std::to_string(starts[i] + 1) + "); give it once");
      }
      if (plugin_family(earlier) == plugin_family(added)) {
        throw PlacementError("placement '" + text_ + "': plugin '" + added + "' at position " +
                             std::to_string(starts.back() + 1) + " repeats '" + earlier +
                             "' (position " + std::to_string(starts[i] + 1) + "): both are '" +
                             plugin_family(added) + "'; give one of them");
      }
    }
  }

  static std::string plugin_family(const std::string& name) {
    size_t end = name.size();
    while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1]))) --end;
    return end == 0 ? name : name.substr(0, end);
  }

  const std::string& text_;
  size_t pos_ = 0;
};

// a * b, held at INT_MAX + 1 once it passes INT_MAX (three degrees of up to INT_MAX would
// overflow even a long long).
long long saturating_product(long long a, int b) {
  const long long limit = static_cast<long long>(INT_MAX) + 1;
  return a > limit / b ? limit : std::min(limit, a * b);
}

}  // namespace

Placement parse_placement(const std::string& text) { return Parser(text).parse(); }

void resolve_placement(Placement& p, int world_size, int pipeline_degree, int tensor_degree) {
  if (world_size < 1) throw PlacementError("world size " + std::to_string(world_size) + " < 1");
  bool has_d = false;
  for (const Axis& a : p.axes) has_d |= a.letter == 'D';
  if (!has_d) p.axes.insert(p.axes.begin(), Axis{'D', 0, false});
  long long fixed = 1;
  Axis* data = nullptr;
  for (Axis& a : p.axes) {
    if (a.degree == 0 && a.letter == 'P') a.degree = pipeline_degree > 0 ? pipeline_degree : 1;
    if (a.degree == 0 && a.letter == 'T') a.degree = tensor_degree > 0 ? tensor_degree : 1;
    if (a.letter == 'D' && a.degree == 0) {
      data = &a;
      continue;
    }
    fixed = saturating_product(fixed, a.degree);
  }
  if (data != nullptr) {
    if (world_size % fixed != 0) {
      throw PlacementError("placement '" + p.text + "': world size " + std::to_string(world_size) +
                           " is not divisible by |P|*|T| = " + std::to_string(fixed) +
                           ", so the D degree cannot be inferred");
    }
    data->degree = static_cast<int>(world_size / fixed);
    fixed = saturating_product(fixed, data->degree);
  }
  if (fixed != world_size) {
    std::string product;
    for (const Axis& a : p.axes) {
      if (!product.empty()) product += "*";
      product += a.letter + std::to_string(a.degree);
    }
    const std::string value =
        fixed > INT_MAX ? "more than " + std::to_string(INT_MAX) : std::to_string(fixed);
    throw PlacementError("placement '" + p.text + "': degrees " + product + " = " + value +
                         " do not multiply to the world size " + std::to_string(world_size));
  }
}

int Placement::degree(char letter) const {
  for (const Axis& a : axes) {
    if (a.letter == letter) return a.degree;
  }
  return 1;
}

int Placement::coordinate(int rank, char letter) const {
  int stride = 1;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    if (it->letter == letter) return (rank / stride) % it->degree;
    stride *= it->degree;
  }
  return 0;
}

std::vector<int> Placement::group_ranks(int rank, char letter) const {
  int stride = 1;
  int degree = 1;
  for (auto it = axes.rbegin(); it != axes.rend(); ++it) {
    if (it->letter == letter) {
      degree = it->degree;
      break;
    }
    stride *= it->degree;
  }
  int base = rank - coordinate(rank, letter) * stride;
  std::vector<int> ranks;
  for (int c = 0; c < degree; ++c) ranks.push_back(base + c * stride);
  return ranks;
}

}  // namespace plexus::engine
