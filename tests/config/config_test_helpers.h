// Helpers shared by the config tests: a check on ConfigError messages, a config from YAML text,
// and a fixture that writes a small config tree into a temp folder and composes it.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "test_util.h"

// Expects `statement` to throw saccade::ConfigError whose message starts with `prefix` (the
// idea of ASSERT_THROWS_WITH in pytorch's test/cpp/api/support.h).
#define EXPECT_CONFIG_ERROR(statement, prefix)                             \
  try {                                                                    \
    statement;                                                             \
    ADD_FAILURE() << "expected a ConfigError from: " #statement;           \
  } catch (const saccade::ConfigError& error) {                            \
    EXPECT_THAT(std::string(error.what()), ::testing::StartsWith(prefix)); \
  }

// A config from YAML text, without composing.
inline saccade::Config load(const std::string& yaml_text) {
  return saccade::Config(YAML::Load(yaml_text));
}

class ConfigTreeTest : public ::testing::Test {
 protected:
  // Writes `text` to <tree>/<name>, e.g. write("dataset/shapes.yaml", "size: 64\n").
  void write(const std::string& name, const std::string& text) {
    saccade::testing::write_file(dir_ / name, text);
  }

  // Composes <tree>/config.yaml with `overrides`.
  saccade::Composition compose(const std::vector<std::string>& overrides = {}) {
    return saccade::compose({dir_.path(), "config", overrides});
  }

  saccade::testing::TempDir dir_;
};
