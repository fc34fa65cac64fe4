// job_key.cpp - where a job's rendezvous key comes from (see job_key.h).
#include "comm/bootstrap/job_key.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cstdlib>
#include <optional>
#include <string_view>

#include "comm/base/config.h"
#include "comm/base/error.h"
#include "comm/bootstrap/handshake.h"
#include "topology/settings/config_read.h"

namespace plexus::bootstrap {
namespace {

constexpr size_t kMinTokenBytes = 16;
constexpr size_t kMaxTokenBytes = 1024;

// SHA-256("plexus-job-key-v1" NUL source NUL value).
JobKeyBytes derive(std::string_view source, std::string_view value) {
  static constexpr char kLabel[] = "plexus-job-key-v1";
  std::string input(kLabel, sizeof(kLabel));  // with its NUL
  input.append(source).push_back('\0');
  input.append(value);
  JobKeyBytes key{};
  unsigned int length = 0;
  EVP_Digest(input.data(), input.size(), key.data(), &length, EVP_sha256(), nullptr);
  return key;
}

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (!value || !*value) return std::nullopt;
  return std::string(value);
}

}  // namespace

plx_result_t random_job_key(JobKey* out) {
  JobKey key;
  static_assert(sizeof(Nonce) == sizeof(JobKeyBytes));
  PLX_CHECK(random_nonce(&key.bytes));
  key.source = "random";
  key.secret = true;
  *out = key;
  return PLX_SUCCESS;
}

plx_result_t job_key_from_env(JobKey* out) {
  JobKey key;
  // Set but empty is refused like any other wrong length: taking it as unset would fall back to
  // a key anyone can compute (a shell's `PLEXUS_JOB_TOKEN=` must not turn authentication off).
  if (auto token = config_text_as_set("PLEXUS_JOB_TOKEN")) {
    if (token->size() < kMinTokenBytes || token->size() > kMaxTokenBytes) {
      return set_error(PLX_ERROR_INVALID_ARGUMENT,
                       fmt::format("PLEXUS_JOB_TOKEN is {} bytes long; it must be {}..{} bytes "
                                   "(plexus-run makes a random one)",
                                   token->size(), kMinTokenBytes, kMaxTokenBytes));
    }
    key.bytes = derive("PLEXUS_JOB_TOKEN", *token);
    key.source = "PLEXUS_JOB_TOKEN";
    key.secret = true;
  } else if (auto run_id = env("TORCHELASTIC_RUN_ID")) {
    key.bytes = derive("TORCHELASTIC_RUN_ID", *run_id);
    key.source = "torchrun run id " + run_id->substr(0, 64);
  } else if (auto jobid = env("OMPI_MCA_ess_base_jobid")) {
    key.bytes = derive("OMPI_MCA_ess_base_jobid", *jobid);
    key.source = "Open MPI job " + jobid->substr(0, 64);
  } else if (auto nspace = env("PMIX_NAMESPACE")) {
    key.bytes = derive("PMIX_NAMESPACE", *nspace);
    key.source = "PMIx namespace " + nspace->substr(0, 64);
  } else if (auto slurm_job = env("SLURM_JOB_ID")) {
    const std::string id = *slurm_job + "." + env("SLURM_STEP_ID").value_or("");
    key.bytes = derive("SLURM_JOB_ID.SLURM_STEP_ID", id);
    key.source = "Slurm job " + id.substr(0, 64);
  } else {
    key.bytes = derive("none", "");
    key.source = "none";
  }
  *out = key;
  return PLX_SUCCESS;
}

}  // namespace plexus::bootstrap
