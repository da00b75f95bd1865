// Long and deeply nested input (issue 44): a long override, key or YAML scalar reads as a short one
// does, without recursing once per character (std::regex did, and overflowed the stack); nesting
// past the bound is a one-line ConfigError naming the input; a key too long for a file name is a
// plain key, never a path the file system refuses.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/overrides.h"
#include "config_test_helpers.h"

namespace saccade {
namespace {

using ::testing::ElementsAre;
using ::testing::EndsWith;
using ::testing::HasSubstr;

// The message of the ConfigError `run` throws; "" when it throws none.
std::string config_error_from(const std::function<void()>& run) {
  try {
    run();
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

// "k.k.k": `levels` segments joined by dots.
std::string dotted_key_of_depth(int levels) {
  std::string key = "k";
  for (int i = 1; i < levels; ++i) key += ".k";
  return key;
}

class LongAndDeepInputTest : public ConfigTreeTest {
 protected:
  void SetUp() override {
    write("config.yaml", "defaults:\n  - db: mysql\n  - _self_\ntrain:\n  lr: 0.1\n");
    write("db/mysql.yaml", "port: 3306\n");
  }
};

TEST(LongOverrides, ParseAsShortOnesDo) {
  const std::string digits(40000, '1');
  const std::string letters(40000, 'x');
  EXPECT_EQ(config_detail::parse_override("train.lr=" + digits).value.Scalar(), digits);
  EXPECT_EQ(config_detail::parse_override("train.lr=0." + digits).value.Scalar(), "0.1111111111111111");
  EXPECT_EQ(config_detail::parse_override("+x=" + letters).value.Scalar(), letters);
  EXPECT_EQ(config_detail::parse_override("+" + letters + "=1").key, letters);
  const config_detail::Override choice = config_detail::parse_override("x=choice(" + letters + ")");
  EXPECT_EQ(choice.sweep, config_detail::SweepKind::kChoice);
  EXPECT_THAT(choice.sweep_values, ElementsAre(letters));
}

TEST_F(LongAndDeepInputTest, LongValueComposesAndReadsAsBefore) {
  const std::string digits(40000, '1');
  const Config config = compose({"train.lr=" + digits}).config;
  EXPECT_EQ(config.get<std::string>("train.lr"), digits);
  EXPECT_CONFIG_ERROR(config.get<double>("train.lr"), "train.lr: expected a finite number, got '111");
  EXPECT_THAT(config.to_yaml(), HasSubstr("lr: " + digits + "\n"));
}

TEST_F(LongAndDeepInputTest, LongYamlScalarsReadAsBefore) {
  const std::string digits(100000, '7');
  const std::string letters(100000, 'x');
  write(
      "db/long.yaml", "number: " + digits + "\nquoted: '" + digits + "'\ntext: " + letters + "\nspaced: '" +
                          std::string(100000, ' ') + "1'\n");
  const Config config = compose({"db=long"}).config;
  EXPECT_EQ(config.get<std::string>("db.number"), digits);
  EXPECT_CONFIG_ERROR(config.get<int64_t>("db.number"), "db.number: expected an integer, got '777");
  EXPECT_CONFIG_ERROR(config.get<double>("db.quoted"), "db.quoted: expected a finite number, got '777");
  EXPECT_EQ(config.get<int>("db.spaced"), 1);  // Python's int() takes the blanks around
  const std::string printed = config.to_yaml();
  EXPECT_THAT(printed, HasSubstr("  quoted: '" + digits + "'\n"));
  EXPECT_THAT(printed, HasSubstr("  text: " + letters + "\n"));
}

// Lines a `# @package` header is looked for in, and an interpolated choice, long ones too.
TEST_F(LongAndDeepInputTest, LongHeaderLinesAndChoicesReadAsBefore) {
  write("db/commented.yaml", "#" + std::string(100000, ' ') + "note\nport: 1\n");
  EXPECT_EQ(compose({"db=commented"}).config.get<int>("db.port"), 1);
  const std::string package(100000, 'p');
  write("db/relocated.yaml", "# @package " + package + "\nport: 2\n");
  EXPECT_EQ(compose({"db=relocated"}).config.get<int>(package + ".port"), 2);
  write("config.yaml", "defaults:\n  - db: mysql\n  - cache: ${db" + std::string(40000, ' ') + "}\n");
  write("cache/mysql.yaml", "size: 5\n");
  EXPECT_EQ(compose().config.get<int>("cache.size"), 5);
}

// A key is looked up as a config group (a folder) first: one too long for a file name is none.
TEST_F(LongAndDeepInputTest, KeyTooLongForAFileNameIsAPlainKey) {
  const std::string name(300, 'k');
  EXPECT_EQ(compose({"+" + name + "=1"}).config.get<int>(name), 1);
  const std::string deepest = dotted_key_of_depth(512);
  EXPECT_EQ(compose({"+" + deepest + "=1"}).config.get<int>(deepest), 1);
  EXPECT_CONFIG_ERROR(
      compose({"db=" + name}),
      "In 'config': Could not find 'db/" + name + "'. Available options in 'db': mysql");
}

TEST_F(LongAndDeepInputTest, KeyNestedDeeperThanAYamlFileIsRefused) {
  for (const int levels : {513, 1000, 50000}) {
    const std::string key = dotted_key_of_depth(levels);
    EXPECT_EQ(
        config_error_from([&] { compose({"+" + key + "=1"}); }),
        "Error parsing override '+" + key + "=1': the key nests " + std::to_string(levels) +
            " levels, more than the 512 allowed");
  }
  EXPECT_THAT(
      config_error_from([&] { compose({"db@" + dotted_key_of_depth(600) + "=mysql"}); }),
      EndsWith("=mysql': the package nests 600 levels, more than the 512 allowed"));
}

TEST_F(LongAndDeepInputTest, YamlFileNestedTooDeepIsRefused) {
  std::string nested_maps;
  for (int i = 0; i < 10000; ++i) nested_maps += "{a: ";
  write("db/maps.yaml", "port: " + nested_maps + "1" + std::string(10000, '}') + "\n");
  write("db/lists.yaml", "port: " + std::string(10000, '[') + std::string(10000, ']') + "\n");
  for (const std::string& option : std::vector<std::string>{"maps", "lists"}) {
    EXPECT_CONFIG_ERROR(
        compose({"db=" + option}),
        (dir_ / ("db/" + option + ".yaml")).string() + ":1: the YAML nests too deep (yaml-cpp stops at ");
  }
  write("db/nested.yaml", "port: " + std::string(400, '[') + "1" + std::string(400, ']') + "\n");
  EXPECT_TRUE(compose({"db=nested"}).config.has("db.port"));
}

}  // namespace
}  // namespace saccade
