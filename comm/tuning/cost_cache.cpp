// cost_cache.cpp - the JSON cache file, and load_or_measure's protocol (PLEXUS_COST_MODEL's text:
// cost_model_text.cpp).
#include "comm/tuning/cost_cache.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <nlohmann/json.hpp>

#include "comm/algorithms/algorithms.h"
#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/base/log.h"
#include "comm/tuning/measure.h"
#include "topology/json_depth.h"
#include "topology/output_path.h"

namespace plexus::comm {
namespace {

constexpr std::string_view kFormat = "plexus-cost-model";
constexpr size_t kMaxNamePart = 100;
// load_or_measure's decision message, right after measure_cost_params's indices.
constexpr uint64_t kDecisionIndex = kMeasureTagIndices;
static_assert(kDecisionIndex < kCostTagIndices, "the decision fits the cost model's indices");

std::string sanitize(std::string_view text) {
  std::string out(text.substr(0, kMaxNamePart));
  for (char& c : out) {
    const bool keep = std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                      c == '-';
    if (!keep) c = '_';
  }
  return out.empty() ? std::string("_") : out;
}

bool positive_finite(double value) { return std::isfinite(value) && value > 0; }

// The number under `key` of a JSON object, or nullopt.
std::optional<double> number(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::optional<std::string> text_field(const nlohmann::json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// What rank 0 tells everyone: where the parameters come from, and the parameters when known.
enum class Decision { Use = 1, Measure = 2, Failed = 3 };

constexpr size_t kRecordValues = 6;  // decision, alpha, beta, gamma, inter alpha, inter beta

plx_result_t broadcast_decision(Transport& transport, uint64_t tag_base,
                                double record[kRecordValues]) {
  CollArgs args;
  args.collective = Collective::Broadcast;
  args.sendbuf = record;
  args.recvbuf = record;
  args.count = kRecordValues;
  args.datatype = PLX_FLOAT64;
  args.root = 0;
  return binomial_broadcast(transport, tag_base | kDecisionIndex, args);
}

// Rank 0's choice of source. *path is the cache file ("" without a cache folder). With
// `two_level`, a cache file without the inter-host values is measured again.
Decision decide(const std::string& host_id, const std::string& provider, int rank, int nranks,
                bool two_level, CostParams* params, std::string* path, plx_result_t* error) {
  const char* next = nranks > 1 ? "measuring" : "one rank, nothing to measure";
  if (const auto text = config_string("PLEXUS_COST_MODEL")) {
    *error = parse_cost_model(*text, rank, params);
    if (*error != PLX_SUCCESS) return Decision::Failed;
    log_message(LogLevel::Info, "cost model from PLEXUS_COST_MODEL: {}{}",
                format_cost_params(*params),
                two_level && !params->two_level() ? " (one level for every host)" : "");
    return Decision::Use;
  }
  const std::string dir = cost_cache_dir();
  if (dir.empty()) {
    log_message(LogLevel::Info, "cost model: no cache folder (set PLEXUS_CACHE_DIR or HOME); {}",
                next);
    return Decision::Measure;
  }
  *path = (std::filesystem::path(dir) / cost_cache_file_name(host_id, provider)).string();
  std::error_code ec;
  if (!std::filesystem::exists(*path, ec)) {
    log_message(LogLevel::Info, "cost model: no cache file {}; {}", *path, next);
    return Decision::Measure;
  }
  std::string why;
  if (!read_cost_cache(*path, host_id, provider, params, &why)) {
    log_message(LogLevel::Warn, "cost model: ignoring cache file {}: {}; {}", *path, why,
                nranks > 1 ? "measuring again" : "one rank, nothing to measure");
    return Decision::Measure;
  }
  if (two_level && !params->two_level()) {
    log_message(LogLevel::Info, "cost model: cache file {} has no inter-host values; measuring "
                "both levels", *path);
    return Decision::Measure;
  }
  log_message(LogLevel::Info, "cost model loaded from {}: {}", *path,
              format_cost_params(*params));
  return Decision::Use;
}

}  // namespace

std::string cost_cache_dir() {
  if (auto dir = config_string("PLEXUS_CACHE_DIR")) return *dir;
  if (auto xdg = env_value("XDG_CACHE_HOME")) return *xdg + "/plexus";
  if (auto home = env_value("HOME")) return *home + "/.cache/plexus";
  return "";
}

std::string cost_cache_file_name(std::string_view host_id, std::string_view provider) {
  return fmt::format("cost-{}-{}.json", sanitize(host_id), sanitize(provider));
}

bool read_cost_cache(const std::string& path, std::string_view host_id, std::string_view provider,
                     CostParams* out, std::string* why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *why = "cannot be opened";
    return false;
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (topology::json_nesting_depth(text) > topology::kMaxJsonDepth) {
    *why = "arrays or objects nest deeper than " + std::to_string(topology::kMaxJsonDepth) +
           " levels";
    return false;
  }
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    *why = "not a JSON object";
    return false;
  }
  if (text_field(doc, "format") != kFormat) {
    *why = fmt::format("format is not \"{}\"", kFormat);
    return false;
  }
  const auto version = number(doc, "version");
  if (!version || *version != kCostCacheVersion) {
    *why = fmt::format("version {}, expected {}",
                       version ? fmt::format("{}", *version) : std::string("missing"),
                       kCostCacheVersion);
    return false;
  }
  const auto file_host = text_field(doc, "host_id");
  const auto file_provider = text_field(doc, "provider");
  if (file_host != host_id || file_provider != provider) {
    *why = fmt::format("made for host \"{}\" provider \"{}\", not \"{}\" \"{}\"",
                       file_host.value_or("?"), file_provider.value_or("?"), host_id, provider);
    return false;
  }
  const auto alpha = number(doc, "alpha_s");
  const auto beta = number(doc, "beta_s_per_byte");
  const auto gamma = number(doc, "gamma_s_per_byte");
  if (!alpha || !beta || !gamma || !positive_finite(*alpha) || !positive_finite(*beta) ||
      !positive_finite(*gamma)) {
    *why = "alpha_s, beta_s_per_byte and gamma_s_per_byte must be positive numbers";
    return false;
  }
  CostParams params{*alpha, *beta, *gamma};
  const auto inter_alpha = number(doc, "inter_alpha_s");
  const auto inter_beta = number(doc, "inter_beta_s_per_byte");
  if (inter_alpha || inter_beta || doc.contains("inter_alpha_s") ||
      doc.contains("inter_beta_s_per_byte")) {
    if (!inter_alpha || !inter_beta || !positive_finite(*inter_alpha) ||
        !positive_finite(*inter_beta)) {
      *why = "inter_alpha_s and inter_beta_s_per_byte must both be positive numbers";
      return false;
    }
    params.inter_alpha_s = *inter_alpha;
    params.inter_beta_s_per_byte = *inter_beta;
  }
  *out = params;
  return true;
}

bool write_cost_cache(const std::string& path, std::string_view host_id,
                      std::string_view provider, const CostParams& params, std::string* why) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target(path);
  std::error_code ec;
  if (target.has_parent_path()) {
    std::filesystem::create_directories(target.parent_path(), ec);
    if (ec) {
      *why = fmt::format("cannot create {}: {}", target.parent_path().string(), ec.message());
      return false;
    }
  }
  nlohmann::json doc = {
      {"format", std::string(kFormat)},
      {"version", kCostCacheVersion},
      {"host_id", std::string(host_id)},
      {"provider", std::string(provider)},
      {"alpha_s", params.alpha_s},
      {"beta_s_per_byte", params.beta_s_per_byte},
      {"gamma_s_per_byte", params.gamma_s_per_byte},
      {"measured_unix_s", static_cast<int64_t>(std::time(nullptr))},
  };
  if (params.two_level()) {
    doc["inter_alpha_s"] = params.inter_alpha_s;
    doc["inter_beta_s_per_byte"] = params.inter_beta_s_per_byte;
  }
  const std::string text =
      doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::string problem = topology::replace_target_problem(path); !problem.empty()) {
    *why = problem;
    return false;
  }
  const std::string temp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), counter++);
  std::FILE* file = std::fopen(temp.c_str(), "wb");
  if (!file) {
    *why = fmt::format("cannot create {}: {}", temp, std::strerror(errno));
    return false;
  }
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size() &&
                       std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  const int write_errno = errno;
  if (std::fclose(file) != 0 || !written) {
    *why = fmt::format("cannot write {}: {}", temp, std::strerror(written ? errno : write_errno));
    std::remove(temp.c_str());
    return false;
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    *why = fmt::format("cannot rename {} to {}: {}", temp, path, std::strerror(errno));
    std::remove(temp.c_str());
    return false;
  }
  return true;
}

plx_result_t load_or_measure(Transport& transport, uint64_t tag_base, const std::string& host_id,
                             CostParams* out) {
  return load_or_measure(transport, tag_base, host_id, nullptr, out);
}

plx_result_t load_or_measure(Transport& transport, uint64_t tag_base, const std::string& host_id,
                             const HostLayout* hosts, CostParams* out) {
  const int rank = transport.rank();
  const bool two_level = hosts != nullptr && hosts->host_count() > 1;
  if (!out) {
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("load_or_measure: rank {}: out is NULL", rank));
  }
  const std::string host = host_id.empty() ? std::string("unknown-host") : host_id;
  const std::string provider = transport.name();

  CostParams params;
  std::string path;
  plx_result_t error = PLX_SUCCESS;
  double record[kRecordValues] = {0, 0, 0, 0, 0, 0};  // decision, then the parameters
  if (rank == 0) {
    const Decision decision =
        decide(host, provider, rank, transport.size(), two_level, &params, &path, &error);
    if (decision == Decision::Failed) {
      // Keep rank 0's message; the broadcast below must not replace it.
      const std::string message = last_error();
      record[0] = static_cast<double>(Decision::Failed);
      if (transport.size() > 1) PLX_CHECK(broadcast_decision(transport, tag_base, record));
      return set_error(error, message);
    }
    if (transport.size() == 1 && decision == Decision::Measure) {
      *out = kDefaultCostParams;
      log_message(LogLevel::Info, "cost model: using the defaults, {}", format_cost_params(*out));
      return PLX_SUCCESS;
    }
    record[0] = static_cast<double>(decision);
    record[1] = params.alpha_s;
    record[2] = params.beta_s_per_byte;
    record[3] = params.gamma_s_per_byte;
    record[4] = params.inter_alpha_s;
    record[5] = params.inter_beta_s_per_byte;
  }
  if (transport.size() > 1) PLX_CHECK(broadcast_decision(transport, tag_base, record));

  const auto decision = static_cast<Decision>(static_cast<int>(record[0]));
  if (decision == Decision::Failed) {
    // Report this rank's own PLEXUS_COST_MODEL error when it has one (usually the same value).
    CostParams mine;
    if (const auto text = config_string("PLEXUS_COST_MODEL")) {
      PLX_CHECK(parse_cost_model(*text, rank, &mine));
    }
    return set_error(PLX_ERROR_INVALID_ARGUMENT,
                     fmt::format("load_or_measure: rank {}: rank 0 rejected its "
                                 "PLEXUS_COST_MODEL (see rank 0's error)",
                                 rank));
  }
  if (decision == Decision::Use) {
    *out = CostParams{record[1], record[2], record[3], record[4], record[5]};
    return PLX_SUCCESS;
  }
  if (decision != Decision::Measure) {
    return set_error(PLX_ERROR_INTERNAL,
                     fmt::format("load_or_measure: rank {}: decision {} from rank 0 is not 1..3",
                                 rank, record[0]));
  }
  const auto start = std::chrono::steady_clock::now();
  PLX_CHECK(measure_cost_params(transport, tag_base, hosts, &params));
  if (rank == 0) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
            .count();
    std::string why;
    if (path.empty()) {
      log_message(LogLevel::Info, "cost model measured over {} in {:.1f} ms: {} (not cached)",
                  provider, ms, format_cost_params(params));
    } else if (write_cost_cache(path, host, provider, params, &why)) {
      log_message(LogLevel::Info, "cost model measured over {} in {:.1f} ms: {}; cached in {}",
                  provider, ms, format_cost_params(params), path);
    } else {
      log_message(LogLevel::Warn, "cost model: could not cache the measurement: {}", why);
    }
  }
  *out = params;
  return PLX_SUCCESS;
}

}  // namespace plexus::comm
