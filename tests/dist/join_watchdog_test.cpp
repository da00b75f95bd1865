// JoinWatchdog: a join that hangs, or an exception escaping one of c10d's threads while joining,
// ends the process with one line naming the rank's step (in a child process: a death test).
#include "dist/join_watchdog.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

namespace saccade {
namespace {

TEST(JoinWatchdog, AHangEndsTheProcessInOneLineASecondPastTheTimeout) {
  // The child re-runs this test alone: fork() beside LibTorch's threads is unsafe.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        JoinWatchdog watchdog(
            std::chrono::seconds(1), "rank 3 could not reach the rendezvous at node0:29500");
        std::this_thread::sleep_for(std::chrono::seconds(30));
      },
      ::testing::ExitedWithCode(1),
      "saccade: error: rank 3 could not reach the rendezvous at node0:29500: no answer within "
      "dist.timeout_s = 1 s\n");
}

// LibTorch 1.13's store client reads junk from a peer that is no store in a thread of its own,
// where std::length_error aborted the process.
TEST(JoinWatchdog, AnExceptionEscapingAnotherThreadEndsTheProcessInOneLine) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        JoinWatchdog watchdog(
            std::chrono::seconds(30), "rank 3 could not reach the rendezvous at node0:29500");
        std::thread([] {
          throw std::length_error("cannot create std::vector larger than max_size()");
        }).join();
      },
      ::testing::ExitedWithCode(1),
      "saccade: error: rank 3 could not reach the rendezvous at node0:29500: cannot create std::vector "
      "larger than max_size\\(\\)\n");
}

}  // namespace
}  // namespace saccade
