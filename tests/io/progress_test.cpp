// ProgressBar: duration formatting and rate bookkeeping.
#include "io/progress.h"

#include <gtest/gtest.h>

namespace saccade {
namespace {

TEST(ProgressBar, FormatsDurations) {
  EXPECT_EQ(ProgressBar::format_duration(0), "00:00");
  EXPECT_EQ(ProgressBar::format_duration(59.4), "00:59");
  EXPECT_EQ(ProgressBar::format_duration(61), "01:01");
  EXPECT_EQ(ProgressBar::format_duration(3 * 3600 + 2 * 60 + 1), "3:02:01");
  EXPECT_EQ(ProgressBar::format_duration(-5), "00:00");
}

TEST(ProgressBar, RateCountsAdvancedItems) {
  ProgressBar bar(10, "test");
  EXPECT_EQ(bar.rate(), 0.0);
  bar.advance(4);
  EXPECT_GT(bar.rate(), 0.0);
  bar.finish();
  bar.finish();  // idempotent
}

}  // namespace
}  // namespace saccade
