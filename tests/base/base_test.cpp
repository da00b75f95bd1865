// The registry template, enum name tables and text helpers, with their exact messages.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <utility>

#include "base/enum_names.h"
#include "base/registry.h"
#include "base/text.h"
#include "test_util.h"

namespace saccade {
namespace {

using Builder = std::function<int()>;

Registry<Builder> two_builtins() {
  return Registry<Builder>("widget", {{"beta", [] { return 2; }}, {"alpha", [] { return 1; }}});
}

TEST(Registry, BuildsBuiltinsAndAddedEntriesByName) {
  auto registry = two_builtins();
  EXPECT_EQ(registry.get("alpha")(), 1);
  registry.add("gamma", [] { return 3; });
  EXPECT_EQ(registry.get("gamma")(), 3);
  EXPECT_EQ(registry.names(), (std::vector<std::string>{"alpha", "beta", "gamma"}));
}

TEST(Registry, UnknownNamesListTheKnownOnesAfterTheKey) {
  const auto registry = two_builtins();
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { registry.get("delta"); }),
      "Unknown widget 'delta'; known widgets: alpha, beta");
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { registry.check("delta", "thing.kind"); }),
      "thing.kind: Unknown widget 'delta'; known widgets: alpha, beta");
  EXPECT_NO_THROW(registry.check("beta"));
}

TEST(Registry, TakenNamesAreRefusedBuiltinsIncluded) {
  auto registry = two_builtins();
  // The built-ins are in place before any other entry.
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([&] { registry.add("alpha", [] { return 9; }); }),
      "Cannot register widget 'alpha': the name is taken");
  registry.add("gamma", [] { return 3; });
  EXPECT_THROW(registry.add("gamma", [] { return 4; }), std::invalid_argument);
  EXPECT_EQ(registry.get("alpha")(), 1);
  EXPECT_EQ(registry.get("gamma")(), 3);
}

enum class Fruit { apple, pear, plum };
const EnumNames<Fruit> kFruitNames(
    "fruit", {{Fruit::apple, "apple"}, {Fruit::pear, "pear"}, {Fruit::plum, "plum"}});

TEST(EnumNames, RoundTripsEveryValue) {
  for (const Fruit fruit : {Fruit::apple, Fruit::pear, Fruit::plum})
    EXPECT_EQ(kFruitNames.parse(kFruitNames.name(fruit)), fruit);
  EXPECT_EQ(kFruitNames.name(Fruit::pear), "pear");
}

TEST(EnumNames, UnknownNamesListTheChoices) {
  EXPECT_EQ(
      testing::message_of<std::invalid_argument>([] { kFruitNames.parse("Pear"); }),
      "Unknown fruit 'Pear'; expected apple, pear or plum");
  EXPECT_EQ(EnumNames<Fruit>("fruit", {{Fruit::apple, "apple"}}).choices(), "apple");
  EXPECT_EQ(
      EnumNames<Fruit>("fruit", {{Fruit::apple, "apple"}, {Fruit::plum, "plum"}}).choices(), "apple or plum");
}

TEST(Text, JoinPutsTheSeparatorBetweenItems) {
  EXPECT_EQ(join({}, ", "), "");
  EXPECT_EQ(join({"a"}, ", "), "a");
  EXPECT_EQ(join({"a", "", "c"}, "|"), "a||c");
}

TEST(Text, ShapeTextIsBracketedAndCommaSeparated) {
  EXPECT_EQ(shape_text({}), "[]");
  EXPECT_EQ(shape_text({2, 3, 4}), "[2, 3, 4]");
}

TEST(Text, DoubleQuotedEscapesWhatJsonAndYamlRequire) {
  EXPECT_EQ(double_quoted(""), "\"\"");
  EXPECT_EQ(double_quoted("say \"hi\" \\o/"), "\"say \\\"hi\\\" \\\\o/\"");
  EXPECT_EQ(double_quoted("a\tb\nc\rd\be\ff"), "\"a\\tb\\nc\\rd\\be\\ff\"");
  EXPECT_EQ(double_quoted(std::string("\x01\x1f\x7f", 3)), "\"\\u0001\\u001f\\u007f\"");
  EXPECT_EQ(double_quoted("caf\xc3\xa9"), "\"caf\xc3\xa9\"");  // UTF-8 passes through
}

TEST(Text, EscapingControlCharactersKeepsAMessageOnOneLine) {
  EXPECT_EQ(escape_control_characters("unknown escape character: \n"), "unknown escape character: \\n");
  EXPECT_EQ(escape_control_characters(std::string("a\0b\x7f \"q\" \\", 10)), "a\\u0000b\\u007f \"q\" \\");
}

TEST(Text, AppendUtf8WritesOneToFourBytesAtEachBoundary) {
  // The bytes as the Unicode standard's Table 3-6 gives them.
  const std::pair<uint32_t, std::string> cases[] = {
      {0x41, "A"},
      {0x7F, "\x7F"},
      {0x80, "\xC2\x80"},
      {0xE9, "\xC3\xA9"},
      {0x7FF, "\xDF\xBF"},
      {0x800, "\xE0\xA0\x80"},
      {0x20AC, "\xE2\x82\xAC"},
      {0xFFFF, "\xEF\xBF\xBF"},
      {0x10000, "\xF0\x90\x80\x80"},
      {0x1F600, "\xF0\x9F\x98\x80"},
      {0x10FFFF, "\xF4\x8F\xBF\xBF"}};
  for (const auto& [code, bytes] : cases) {
    std::string out = "x";
    append_utf8(out, code);
    EXPECT_EQ(out, "x" + bytes) << std::hex << code;
  }
}

// RFC 4648, section 10's test vectors, and bytes above 0x7f (which a signed char would corrupt).
TEST(Base64, MatchesRfc4648Vectors) {
  EXPECT_EQ(base64_encode(""), "");
  EXPECT_EQ(base64_encode("f"), "Zg==");
  EXPECT_EQ(base64_encode("fo"), "Zm8=");
  EXPECT_EQ(base64_encode("foo"), "Zm9v");
  EXPECT_EQ(base64_encode("foob"), "Zm9vYg==");
  EXPECT_EQ(base64_encode("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64_encode(std::string("\xff\x00\xfe", 3)), "/wD+");
}

}  // namespace
}  // namespace saccade
