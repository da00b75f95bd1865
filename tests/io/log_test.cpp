// Logger: level parsing and the run's log file.
#include "io/log.h"

#include <gtest/gtest.h>

#include "test_util.h"

namespace saccade::testing {
namespace {

TEST(Log, ParsesLevelsAndRejectsOthers) {
  EXPECT_EQ(log::parse_level("debug"), log::Level::debug);
  EXPECT_EQ(log::parse_level("warn"), log::Level::warn);
  EXPECT_EQ(log::to_string(log::Level::error), "error");
  try {
    log::parse_level("loud");
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("'loud'"), std::string::npos);
  }
}

TEST(Log, FileGetsInfoAndAboveWholeLines) {
  TempDir dir;
  const auto path = dir / "nested/run.log";
  log::set_console_level(log::Level::error);
  log::set_file(path);
  log::debug() << "hidden";
  log::info() << "loss " << 2.5;
  log::warn() << "careful";
  log::set_file("");
  log::set_console_level(log::Level::info);
  const std::string text = read_file(path);
  EXPECT_EQ(text.find("hidden"), std::string::npos);
  EXPECT_NE(text.find("[info] loss 2.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[warn] careful\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace saccade::testing
