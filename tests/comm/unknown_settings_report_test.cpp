// unknown_settings_report_test.cpp - a PLEXUS_* name the table lacks is reported once per
// process, through the log, when the first communicator is created (comm/base/config.h).
//
// Two real ranks run with two misspelt settings in their environment. Each captures its stderr,
// creates the world communicator and then a second one (plx_comm_init_rank on a unique id that
// rank 0 broadcasts), and checks that its log has each warning exactly once, as a WARN line
// naming its own rank; a later report_unknown_settings() call writes nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm/base/config.h"
#include "plexus/plexus.h"
#include "tests/support/multiprocess.h"
#include "tests/support/stderr_capture.h"
#include "tests/support/subprocess.h"

namespace plexus::test {
namespace {

std::string failed(const char* what, plx_result_t rc) {
  return std::string(what) + ": " + plx_get_error_string(rc) + ": " + plx_get_last_error(nullptr);
}

// Joins a second communicator of the world's ranks, on a unique id rank 0 broadcasts, and
// destroys it; "" or what failed.
std::string join_second_communicator(int rank, plx_comm_t world) {
  int size = 0;
  plx_unique_id_t id{};
  plx_comm_t second = nullptr;
  if (plx_result_t rc = plx_comm_size(world, &size); rc != PLX_SUCCESS)
    return failed("plx_comm_size", rc);
  if (plx_result_t rc = rank == 0 ? plx_get_unique_id(&id) : PLX_SUCCESS; rc != PLX_SUCCESS)
    return failed("plx_get_unique_id", rc);
  if (plx_result_t rc = plx_broadcast(&id, &id, sizeof(id), PLX_UINT8, 0, world, nullptr);
      rc != PLX_SUCCESS)
    return failed("plx_broadcast", rc);
  if (plx_result_t rc = plx_comm_init_rank(&second, size, id, rank); rc != PLX_SUCCESS)
    return failed("plx_comm_init_rank", rc);
  if (plx_result_t rc = plx_comm_destroy(second); rc != PLX_SUCCESS)
    return failed("plx_comm_destroy", rc);
  return "";
}

// Creates the world communicator and a second one, then destroys both; "" or what failed.
std::string create_two_communicators(int rank) {
  plx_comm_t world = nullptr;
  if (plx_result_t rc = plx_comm_init_from_env(&world); rc != PLX_SUCCESS)
    return failed("plx_comm_init_from_env", rc);
  const std::string why = join_second_communicator(rank, world);
  if (plx_result_t rc = plx_comm_destroy(world); rc != PLX_SUCCESS && why.empty())
    return failed("plx_comm_destroy", rc);
  return why;
}

// The log (stderr) of create_two_communicators(rank); *why says what failed ("" if nothing).
std::string log_of_two_communicators(int rank, std::string* why) {
  StderrCapture capture;
  *why = create_two_communicators(rank);
  return capture.finish();
}

// How many lines of `log` are "plexus rank R: WARN <seconds>s <text>".
int count_warnings(const std::string& log, int rank, const std::string& text) {
  const std::string prefix = "plexus rank " + std::to_string(rank) + ": WARN ";
  int found = 0;
  for (const std::string& line : split_lines(log)) {
    if (line.rfind(prefix, 0) == 0 && line.size() > text.size() &&
        line.compare(line.size() - text.size(), text.size(), text) == 0 &&
        line[line.size() - text.size() - 1] == ' ' &&
        line[line.size() - text.size() - 2] == 's')
      ++found;
  }
  return found;
}

TEST(UnknownSettingsReport, EachUnknownNameIsLoggedOncePerProcessWithTheNearestName) {
  const EnvList env = {{"PLEXUS_FI_PROVIDER", "tcp"},
                       {"PLEXUS_TIMEOUT_MS", "60000"},
                       {"PLEXUS_ALOG", "ring"},
                       {"PLEXUS_TIMEOUT", "5"},
                       {"PLEXUS_ALGO", "allreduce:ring"}};
  const auto outcomes = run_ranks(
      2,
      [](int rank) {
        std::string why;
        const std::string log = log_of_two_communicators(rank, &why);
        if (!why.empty()) return rank_failure(rank, why + "\n" + log);
        StderrCapture later;
        report_unknown_settings();  // a later call adds nothing
        if (const std::string more = later.finish(); !more.empty())
          return rank_failure(rank, "a second report:\n" + more);
        for (const std::string& text :
             {std::string("unknown setting PLEXUS_ALOG (did you mean PLEXUS_ALGO?)"),
              std::string("unknown setting PLEXUS_TIMEOUT (did you mean PLEXUS_TIMEOUT_MS?)")}) {
          if (count_warnings(log, rank, text) != 1)
            return rank_failure(rank, "not exactly one \"" + text + "\" in:\n" + log);
        }
        if (log.find("unknown setting PLEXUS_ALGO ") != std::string::npos ||
            log.find("unknown setting PLEXUS_FI_PROVIDER ") != std::string::npos)
          return rank_failure(rank, "a known setting was reported:\n" + log);
        return 0;
      },
      120.0, env);
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

TEST(UnknownSettingsReport, NothingIsLoggedWhenEveryNameIsKnown) {
  const auto outcomes = run_ranks(
      1,
      [](int rank) {
        std::string why;
        const std::string log = log_of_two_communicators(rank, &why);
        if (!why.empty()) return rank_failure(rank, why + "\n" + log);
        if (log.find("unknown setting") != std::string::npos)
          return rank_failure(rank, "unexpected report:\n" + log);
        return 0;
      },
      120.0, {{"PLEXUS_FI_PROVIDER", "tcp"}, {"PLEXUS_TIMEOUT_MS", "60000"}});
  std::string why;
  EXPECT_TRUE(all_passed(outcomes, &why)) << why;
}

}  // namespace
}  // namespace plexus::test
