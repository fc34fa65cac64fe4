// stop_request_test.cpp - SIGTERM and SIGINT only record a stop request while a
// StopRequestScope lives (engine/train/stop_request.h); a second SIGINT kills; the previous
// handlers come back when the scope ends. During set-up (SetupStopScope) a stop signal ends the
// process at once, naming the stage.
#include "engine/train/stop_request.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <stdexcept>

namespace plexus::engine {
namespace {

std::atomic<int> g_previous_calls{0};
extern "C" void previous_handler(int) { ++g_previous_calls; }

TEST(StopRequest, SigtermOnlySetsTheFlag) {
  EXPECT_FALSE(stop_requested());
  {
    StopRequestScope scope;
    EXPECT_FALSE(stop_requested());
    EXPECT_EQ(stop_signal(), 0);
    ASSERT_EQ(raise(SIGTERM), 0);  // the default action would end this process
    EXPECT_TRUE(stop_requested());
    EXPECT_EQ(stop_signal(), SIGTERM);
    ASSERT_EQ(raise(SIGTERM), 0);  // repeated SIGTERMs keep the request
    EXPECT_EQ(stop_signal(), SIGTERM);
  }
}

TEST(StopRequest, FirstSigintRequestsSecondKills) {
  EXPECT_EXIT(
      {
        StopRequestScope scope;
        raise(SIGINT);
        if (!stop_requested() || stop_signal() != SIGINT) _exit(3);
        raise(SIGINT);
        _exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
  EXPECT_EXIT(  // Ctrl-C while a SIGTERM stop is pending
      {
        StopRequestScope scope;
        raise(SIGTERM);
        raise(SIGINT);
        _exit(0);
      },
      ::testing::KilledBySignal(SIGINT), "");
}

TEST(StopRequest, ScopeRestoresThePreviousHandlers) {
  struct sigaction sa {}, old_term {}, old_int {};
  sa.sa_handler = previous_handler;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGTERM, &sa, &old_term), 0);
  ASSERT_EQ(sigaction(SIGINT, &sa, &old_int), 0);
  g_previous_calls = 0;
  {
    StopRequestScope scope;
    raise(SIGTERM);
    EXPECT_EQ(g_previous_calls, 0);
    EXPECT_TRUE(stop_requested());
    clear_stop_request();
    EXPECT_FALSE(stop_requested());
    EXPECT_THROW(StopRequestScope second, std::logic_error);
  }
  EXPECT_FALSE(stop_requested());
  raise(SIGTERM);
  raise(SIGINT);
  EXPECT_EQ(g_previous_calls, 2);
  EXPECT_FALSE(stop_requested());
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGINT, &old_int, nullptr);
}

// Set-up has nothing to save: the signal ends the process at once with its default action,
// after a message naming the prefix, the signal and the stage.
TEST(StopRequest, DuringSetUpASignalEndsTheProcessNamingTheStage) {
  EXPECT_EXIT(
      {
        StopRequestScope scope;
        SetupStopScope setup("plexus-train: rank 3: ");
        set_setup_stage("building the model");
        raise(SIGTERM);
        _exit(0);  // not reached
      },
      ::testing::KilledBySignal(SIGTERM),
      "plexus-train: rank 3: stopped by SIGTERM during set-up \\(building the model\\): nothing "
      "was trained or saved");
  EXPECT_EXIT(
      {
        StopRequestScope scope;
        SetupStopScope setup("x: ");
        set_setup_stage("reading the checkpoint");
        raise(SIGINT);
        _exit(0);
      },
      ::testing::KilledBySignal(SIGINT),
      "x: stopped by SIGINT during set-up \\(reading the checkpoint\\)");
  // A request recorded just before set-up began ends it as soon as the scope starts.
  EXPECT_EXIT(
      {
        StopRequestScope scope;
        raise(SIGTERM);
        SetupStopScope setup("y: ");
        _exit(0);
      },
      ::testing::KilledBySignal(SIGTERM), "y: stopped by SIGTERM during set-up");
}

// Once set-up ends, a signal only records the request again (the step finishes and saves).
TEST(StopRequest, AfterSetUpASignalOnlyRecordsTheRequest) {
  StopRequestScope scope;
  {
    SetupStopScope setup("z: ");
    set_setup_stage("reading the data");
    EXPECT_STREQ(setup_stage(), "reading the data");
    EXPECT_THROW(SetupStopScope second("w: "), std::logic_error);
  }
  set_setup_stage("training");
  ASSERT_EQ(raise(SIGTERM), 0);
  EXPECT_TRUE(stop_requested());
  EXPECT_STREQ(setup_stage(), "training");
}

}  // namespace
}  // namespace plexus::engine
