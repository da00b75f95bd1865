// Config reads: typed values, type errors, strict unknown keys, and to_yaml text (the expected
// YAML is what OmegaConf.to_yaml prints for the same tree).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_helpers.h"

namespace saccade {
namespace {

using ::testing::ElementsAre;

const char kTrain[] =
    "train:\n"
    "  batch_size: 32\n"
    "  lr: 1e-3\n"
    "  amp: yes\n"
    "  name: run\n"
    "  sizes: [1, 2, 3]\n"
    "  scales: [0.5, 1]\n"
    "  tags: [a, b]\n"
    "  hex: 0x10\n"
    "  bad: abc\n"
    "  none: null\n"
    "  big: 99999999999\n"
    "  huge: 1e400\n"
    "  tiny: 1e-310\n"
    "  beyond_float: 1e39\n";

TEST(ConfigReads, TypedValues) {
  const Config c = load(kTrain);
  EXPECT_EQ(c.get<int>("train.batch_size"), 32);
  EXPECT_EQ(c.get<int64_t>("train.big"), 99999999999LL);
  EXPECT_FLOAT_EQ(c.get<float>("train.lr"), 1e-3f);
  EXPECT_DOUBLE_EQ(c.get<double>("train.batch_size"), 32.0);
  EXPECT_TRUE(c.get<bool>("train.amp"));
  EXPECT_EQ(c.get<std::string>("train.name"), "run");
  EXPECT_EQ(c.get<std::string>("train.lr"), "0.001");
  EXPECT_EQ(c.get<int>("train.hex"), 16);
  EXPECT_THAT(c.get<std::vector<int>>("train.sizes"), ElementsAre(1, 2, 3));
  EXPECT_THAT(c.get<std::vector<int64_t>>("train.sizes"), ElementsAre(1, 2, 3));
  EXPECT_THAT(c.get<std::vector<double>>("train.scales"), ElementsAre(0.5, 1.0));
  EXPECT_THAT(c.get<std::vector<float>>("train.scales"), ElementsAre(0.5f, 1.0f));
  EXPECT_THAT(c.get<std::vector<std::string>>("train.tags"), ElementsAre("a", "b"));
  EXPECT_FALSE(c.get_optional<int>("train.none").has_value());
  EXPECT_EQ(c.get_optional<int>("train.batch_size"), 32);
}

TEST(ConfigReads, TypeErrors) {
  const Config c = load(kTrain);
  EXPECT_CONFIG_ERROR(c.get<int>("train.bad"), "train.bad: expected an integer, got 'abc'");
  EXPECT_CONFIG_ERROR(c.get<int>("train.lr"), "train.lr: expected an integer, got '1e-3'");
  EXPECT_CONFIG_ERROR(c.get<int>("train.big"), "train.big: 99999999999 is too large (at most 2147483647)");
  EXPECT_CONFIG_ERROR(c.get<bool>("train.bad"), "train.bad: expected a boolean, got 'abc'");
  EXPECT_CONFIG_ERROR(c.get<double>("train.bad"), "train.bad: expected a number, got 'abc'");
  EXPECT_CONFIG_ERROR(c.get<double>("train.huge"), "train.huge: expected a finite number, got '1e400'");
  EXPECT_CONFIG_ERROR(
      c.get<double>("train.tiny"),
      "train.tiny: 1e-310 is too close to 0 (the smallest normal number is 2.2e-308); use 0 or a larger "
      "number");
  EXPECT_DOUBLE_EQ(c.get<double>("train.beyond_float"), 1e39);
  EXPECT_CONFIG_ERROR(
      c.get<float>("train.beyond_float"), "train.beyond_float: expected a finite number, got '1e39'");
  EXPECT_CONFIG_ERROR(c.get<int>("train"), "train: expected an integer, got a mapping");
  EXPECT_CONFIG_ERROR(c.get<std::string>("train.tags"), "train.tags: expected a string, got a list");
  EXPECT_CONFIG_ERROR(c.get<std::vector<int>>("train.bad"), "train.bad: expected a list, got 'abc'");
  EXPECT_CONFIG_ERROR(c.get<std::vector<int>>("train.tags"), "train.tags.0: expected an integer, got 'a'");
  EXPECT_CONFIG_ERROR(c.get<int>("train.none"), "train.none: expected a value, got null");
  EXPECT_CONFIG_ERROR(c.keys("train.name"), "train.name: expected a mapping, got 'run'");
}

TEST(ConfigReads, UnknownKeysNameTheNearest) {
  const Config c = load(kTrain);
  EXPECT_CONFIG_ERROR(
      c.get<int>("train.batchsize"),
      "Key 'train.batchsize' is not in the config. Did you mean 'train.batch_size'?");
  EXPECT_CONFIG_ERROR(
      c.get_optional<int>("trian.lr"), "Key 'trian.lr' is not in the config. Did you mean 'train.lr'?");
  EXPECT_CONFIG_ERROR(c.keys("nope"), "Key 'nope' is not in the config.");
  EXPECT_CONFIG_ERROR(Config().get<int>("x"), "Key 'x' is not in the config.");
}

TEST(ConfigReads, HasAndKeys) {
  const Config c = load(kTrain);
  EXPECT_TRUE(c.has("train.none"));
  EXPECT_TRUE(c.has("train.sizes.2"));
  EXPECT_FALSE(c.has("train.sizes.3"));
  EXPECT_FALSE(c.has("train.nope"));
  EXPECT_THAT(c.keys(""), ElementsAre("train"));
  EXPECT_THAT(
      c.keys("train"), ElementsAre(
                           "batch_size", "lr", "amp", "name", "sizes", "scales", "tags", "hex", "bad", "none",
                           "big", "huge", "tiny", "beyond_float"));
}

TEST(ConfigYaml, PrintsLikeOmegaConf) {
  const Config c = load(
      "name: exp\nlr: 1e-3\nsteps: 1_000\nflag: yes\nempty: {}\nnone: []\nnothing: ~\nver: '1.0'\n"
      "date: \"2024-01-02\"\ncolon: 'a: b'\nlist:\n- a: 1\n  b: [x, z]\n- [1, 2]\npath: /data/${name}\n"
      "big: 1e16\nneg: -0.5\n");
  const std::string common =
      "steps: 1000\nflag: true\nempty: {}\nnone: []\nnothing: null\nver: '1.0'\ndate: '2024-01-02'\n"
      "colon: 'a: b'\nlist:\n- a: 1\n  b:\n  - x\n  - z\n- - 1\n  - 2\n";
  EXPECT_EQ(
      c.to_yaml(false), "name: exp\nlr: 0.001\n" + common + "path: /data/${name}\nbig: 1.0e+16\nneg: -0.5\n");
  EXPECT_EQ(
      c.to_yaml(true), "name: exp\nlr: 0.001\n" + common + "path: /data/exp\nbig: 1.0e+16\nneg: -0.5\n");
  EXPECT_EQ(Config().to_yaml(), "{}\n");
  EXPECT_EQ(load("").to_yaml(), "{}\n");
}

// As OmegaConf prints them, except `h`: PyYAML folds a multi-line string into a single-quoted
// block, double quotes read back the same.
TEST(ConfigYaml, QuotesOnlyWhereYamlWouldMisread) {
  const Config c = load(
      "a: \"- a\"\nb: \"a #b\"\nc: a#b\nd: \"0x10\"\ne: 'null'\nf: ' x'\ng: \"tab\\there\"\nh: \"x\\ny\"\n"
      "i: \"it's\"\nj: '12:30:00'\nk: '~'\nl: 'on'\n");
  EXPECT_EQ(
      c.to_yaml(),
      "a: '- a'\nb: 'a #b'\nc: a#b\nd: '0x10'\ne: 'null'\nf: ' x'\ng: \"tab\\there\"\nh: \"x\\ny\"\n"
      "i: it's\nj: '12:30:00'\nk: '~'\nl: 'on'\n");
}

}  // namespace
}  // namespace saccade
