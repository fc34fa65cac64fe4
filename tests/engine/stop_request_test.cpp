// stop_request_test.cpp - SIGTERM and SIGINT only record a stop request while a
// StopRequestScope lives (engine/train/stop_request.h); a second SIGINT kills; the previous
// handlers come back when the scope ends.
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

}  // namespace
}  // namespace plexus::engine
