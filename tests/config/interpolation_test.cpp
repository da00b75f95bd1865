// Interpolation as OmegaConf resolves it: absolute and relative keys, nesting, whole subtrees,
// resolvers (oc.env, oc.decode, now), `???`, cycles and escapes. Expected values were checked
// by hand against OmegaConf 2.2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>

#include "config/config.h"
#include "config_test_helpers.h"

namespace saccade {
namespace {

using ::testing::ElementsAre;

TEST(Interpolation, AbsoluteRelativeAndNested) {
  const Config c = load(
      "a:\n  b: 3\n"
      "x:\n  a: 1\n  b: ${.a}\n  c: ${..y}\n"
      "y: 2\n"
      "plans:\n  p1: 10\n  p2: 20\n"
      "selected: p2\n"
      "plan: ${plans.${selected}}\n"
      "abs: ${a.b}\n"
      "l: [5, 6]\n"
      "second: ${l.1}\n"
      "first: ${l[0]}\n");
  EXPECT_EQ(c.get<int>("abs"), 3);
  EXPECT_EQ(c.get<int>("x.b"), 1);
  EXPECT_EQ(c.get<int>("x.c"), 2);
  EXPECT_EQ(c.get<int>("plan"), 20);
  EXPECT_EQ(c.get<int>("second"), 6);
  EXPECT_EQ(c.get<int>("first"), 5);
}

// A nested interpolation names a key, so it must give a string (OmegaConf's rule): an int does not.
TEST(Interpolation, NestedKeyMustBeAString) {
  const Config c = load("a: [x, y, z]\nidx: 2\npicked: ${a.${idx}}\nname: '2'\nquoted: ${a.${name}}\n");
  EXPECT_CONFIG_ERROR(
      c.get<std::string>("picked"),
      "The following interpolation is used to denote a config key and thus should return a string, but "
      "instead "
      "returned `2` of type `<class 'int'>`: ${idx}");
  EXPECT_EQ(c.get<std::string>("quoted"), "z");
}

TEST(Interpolation, WholeValueKeepsTypeAndSubtree) {
  const Config c = load(
      "num: 5\nsq: '5'\nflag: true\nx: ${num}\nsy: ${sq}\ns: v_${flag}_${none}_${num}\nnone: null\n"
      "j:\n  n: 1\n  m: ${.n}\n  k: ${..num}\n"
      "p: ${j}\n");
  EXPECT_EQ(
      c.to_yaml(true),
      "num: 5\nsq: '5'\nflag: true\nx: 5\nsy: '5'\ns: v_True_None_5\nnone: null\n"
      "j:\n  'n': 1\n  m: 1\n  k: 5\n"
      "p:\n  'n': 1\n  m: 1\n  k: 5\n");
  // Reads go through the interpolated subtree; its relative keys stay relative to `j`.
  EXPECT_EQ(c.get<int>("p.m"), 1);
  EXPECT_EQ(c.get<int>("p.k"), 5);
  EXPECT_THAT(c.keys("p"), ElementsAre("n", "m", "k"));
  EXPECT_EQ(c.resolved("p")["m"].as<int>(), 1);
}

TEST(Interpolation, EnvironmentVariables) {
  setenv("SACCADE_TEST_VAR", "hello", 1);
  unsetenv("SACCADE_TEST_UNSET");
  const Config c = load(
      "set: ${oc.env:SACCADE_TEST_VAR}\n"
      "fallback: ${oc.env:SACCADE_TEST_UNSET,8080}\n"
      "quoted: ${oc.env:SACCADE_TEST_UNSET,'a,b'}\n"
      "none: ${oc.env:SACCADE_TEST_UNSET,null}\n"
      "missing: ${oc.env:SACCADE_TEST_UNSET}\n"
      "path: /home/${oc.env:SACCADE_TEST_VAR}/data\n");
  EXPECT_EQ(c.get<std::string>("set"), "hello");
  EXPECT_EQ(c.get<std::string>("fallback"), "8080");  // a default becomes a string...
  EXPECT_EQ(c.get<int>("fallback"), 8080);            // ...which typed reads convert
  EXPECT_EQ(c.get<std::string>("quoted"), "a,b");
  EXPECT_FALSE(c.get_optional<std::string>("none").has_value());
  EXPECT_EQ(c.get<std::string>("path"), "/home/hello/data");
  EXPECT_CONFIG_ERROR(c.get<std::string>("missing"), "Environment variable 'SACCADE_TEST_UNSET' not found");
}

TEST(Interpolation, MandatoryValues) {
  const Config c = load("a: ???\nb: ${a}\nc: 1\n");
  EXPECT_TRUE(c.has("a"));
  EXPECT_CONFIG_ERROR(c.get<int>("a"), "Missing mandatory value: a");
  EXPECT_CONFIG_ERROR(c.get<int>("b"), "Missing mandatory value: a");
  EXPECT_EQ(c.to_yaml(false), "a: ???\nb: ${a}\nc: 1\n");
  EXPECT_EQ(load("a: ???\nc: 1\n").to_yaml(true), "a: ???\nc: 1\n");  // printed, not an error
  // As OmegaConf.resolve: an interpolation of a missing value becomes missing itself.
  EXPECT_EQ(c.to_yaml(true), "a: ???\nb: ???\nc: 1\n");
  EXPECT_CONFIG_ERROR(c.resolved(), "Missing mandatory value: a");
}

TEST(Interpolation, Errors) {
  EXPECT_CONFIG_ERROR(
      load("a: ${b}\nb: ${c}\nc: ${a}\n").get<int>("a"),
      "Recursive interpolation detected: a -> b -> c -> a");
  EXPECT_CONFIG_ERROR(
      load("a:\n  x: ${a.x}\n").get<int>("a.x"), "Recursive interpolation detected: a.x -> a.x");
  // A value interpolating a container that holds it: an endless expansion, refused.
  EXPECT_CONFIG_ERROR(
      load("m:\n  n: ${m}\n").resolved(),
      "Recursive interpolation detected: m.n refers to m, which contains it");
  EXPECT_CONFIG_ERROR(
      load("a:\n  x: ${b}\nb:\n  y: ${a}\n").resolved(),
      "Recursive interpolation detected: b.y refers to a, which contains it");
  EXPECT_CONFIG_ERROR(load("a: ${nope}\n").get<int>("a"), "Interpolation key 'nope' not found");
  EXPECT_CONFIG_ERROR(load("a: ${..nope}\n").get<int>("a"), "Interpolation key '..nope' not found");
  EXPECT_CONFIG_ERROR(load("a: ${foo:1}\n").get<int>("a"), "Unsupported interpolation type foo");
}

// Interpolations inside interpolations, or chained through keys, are recursion: deep ones are a
// ConfigError, not a stack overflow.
TEST(Interpolation, DeepNestingIsRefused) {
  std::string nested = "a";
  for (int i = 0; i < 20000; ++i) nested = "${" + nested + "}";
  EXPECT_CONFIG_ERROR(
      load("a: a\nb: " + nested + "\n").get<std::string>("b"), "Interpolations nest deeper than 512 levels");
  std::string chain;
  for (int i = 0; i < 20000; ++i) chain += "k" + std::to_string(i) + ": ${k" + std::to_string(i + 1) + "}\n";
  chain += "k20000: 1\n";
  EXPECT_CONFIG_ERROR(load(chain).get<int>("k0"), "Interpolations nest deeper than 512 levels");
  nested = "a";
  for (int i = 0; i < 500; ++i) nested = "${" + nested + "}";
  EXPECT_EQ(load("a: a\nb: " + nested + "\n").get<std::string>("b"), "a");
}

TEST(Interpolation, EscapesAndDecode) {
  const Config c = load("a: \\${b}\nb: 1\nc: \\\\${b}\nd: ${oc.decode:'[1, 2]'}\n");
  EXPECT_EQ(c.get<std::string>("a"), "${b}");
  EXPECT_EQ(c.get<std::string>("c"), "\\1");
  EXPECT_THAT(c.get<std::vector<int>>("d"), ElementsAre(1, 2));
  EXPECT_CONFIG_ERROR(
      load("e:\n  f: ${oc.decode:'[1,'}\n").get<std::string>("e.f"),
      "oc.decode cannot parse '[1,': missing value (from 'e.f')");
}

// OmegaConf 2.3's oc.select, oc.dict.keys, oc.dict.values and oc.create.
TEST(Interpolation, SelectDictResolversAndCreate) {
  const Config c = load(
      "a:\n  x: 1\n  y: ${b}\nb: 2\nm: ???\n"
      "s1: ${oc.select:a.x}\ns2: ${oc.select:nope,5}\ns3: ${oc.select:m,'d'}\ns4: ${oc.select:nope}\n"
      "keys: ${oc.dict.keys:a}\nvalues: ${oc.dict.values:a}\nrel:\n  n: 3\n  s: ${oc.select:.n}\n"
      "made: \"${oc.create:'{p: 1, q: [2]}'}\"\nbad_keys: ${oc.dict.keys:b}\nno_keys: ${oc.dict.keys:zz}\n");
  EXPECT_EQ(c.get<int>("s1"), 1);
  EXPECT_EQ(c.get<int>("s2"), 5);
  EXPECT_EQ(c.get<std::string>("s3"), "d");
  EXPECT_FALSE(c.get_optional<int>("s4").has_value());
  EXPECT_THAT(c.get<std::vector<std::string>>("keys"), ElementsAre("x", "y"));
  EXPECT_THAT(c.get<std::vector<int>>("values"), ElementsAre(1, 2));
  EXPECT_EQ(c.get<int>("rel.s"), 3);
  EXPECT_EQ(c.get<int>("made.p"), 1);
  EXPECT_THAT(c.get<std::vector<int>>("made.q"), ElementsAre(2));
  EXPECT_CONFIG_ERROR(c.get<std::string>("bad_keys"), "oc.dict.keys: 'b' is not a mapping (from 'bad_keys')");
  EXPECT_CONFIG_ERROR(c.get<std::string>("no_keys"), "oc.dict.keys: key 'zz' not found (from 'no_keys')");
}

TEST(Interpolation, NowIsFixedForTheProcess) {
  const Config c =
      load("stamp: ${now:%Y-%m-%d_%H-%M-%S}\nyear: ${now:%Y}\ndir: runs/${now:%Y-%m-%d_%H-%M-%S}\n");
  const std::string stamp = c.get<std::string>("stamp");
  EXPECT_TRUE(std::regex_match(stamp, std::regex("\\d{4}-\\d{2}-\\d{2}_\\d{2}-\\d{2}-\\d{2}"))) << stamp;
  EXPECT_EQ(c.get<std::string>("year"), stamp.substr(0, 4));
  EXPECT_EQ(c.get<std::string>("dir"), "runs/" + stamp);
  EXPECT_EQ(load("again: ${now:%Y-%m-%d_%H-%M-%S}\n").get<std::string>("again"), stamp);
}

}  // namespace
}  // namespace saccade
