// JSON: values, strict parsing with line:column errors, UTF-8 handling, stable serialization.
#include "io/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "test_util.h"

namespace saccade::testing {
namespace {

// The message of the std::invalid_argument that `text` raises when parsed as "f.json".
std::string parse_error(const std::string& text) {
  try {
    parse_json(text, "f.json");
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "(no error)";
}

TEST(Json, ParsesEveryValueKind) {
  const Json doc =
      parse_json(R"({"a": null, "b": [true, false], "c": -12, "d": 2.5e3, "e": "x\ty", "f": {}})");
  ASSERT_TRUE(doc.is_object());
  EXPECT_TRUE(doc.at("a").is_null());
  EXPECT_EQ(doc.at("b").size(), 2u);
  EXPECT_TRUE(doc.at("b").at(0).as_bool());
  EXPECT_FALSE(doc.at("b").at(1).as_bool());
  EXPECT_TRUE(doc.at("c").is_integer());
  EXPECT_EQ(doc.at("c").as_int64(), -12);
  EXPECT_EQ(doc.at("d").type(), Json::Type::real);
  EXPECT_DOUBLE_EQ(doc.at("d").as_double(), 2500.0);
  EXPECT_EQ(doc.at("d").as_int64(), 2500);  // a real with an integral value reads as an integer
  EXPECT_EQ(doc.at("e").as_string(), "x\ty");
  EXPECT_TRUE(doc.at("f").is_object());
  EXPECT_EQ(doc.find("missing"), nullptr);
}

TEST(Json, KeepsNumberKinds) {
  EXPECT_EQ(parse_json("9223372036854775807").as_int64(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(parse_json("-9223372036854775808").as_int64(), std::numeric_limits<int64_t>::min());
  // One past int64 becomes a double instead of wrapping.
  EXPECT_EQ(parse_json("9223372036854775808").type(), Json::Type::real);
  EXPECT_EQ(parse_json("-0").as_int64(), 0);
  EXPECT_EQ(parse_json("1.0").type(), Json::Type::real);
  EXPECT_DOUBLE_EQ(parse_json("1E-2").as_double(), 0.01);
}

TEST(Json, DecodesEscapesAndSurrogatePairs) {
  EXPECT_EQ(parse_json(R"("\"\\\/\b\f\n\r\t")").as_string(), "\"\\/\b\f\n\r\t");
  EXPECT_EQ(parse_json(R"("\u00e9")").as_string(), "\xC3\xA9");                // é
  EXPECT_EQ(parse_json(R"("\u20AC")").as_string(), "\xE2\x82\xAC");            // €
  EXPECT_EQ(parse_json(R"("\ud83d\ude00")").as_string(), "\xF0\x9F\x98\x80");  // U+1F600
  EXPECT_EQ(parse_json("\"caf\xC3\xA9\"").as_string(), "caf\xC3\xA9");         // raw UTF-8 passes through
  EXPECT_EQ(parse_json("\xEF\xBB\xBF[1]").size(), 1u);                         // BOM skipped
}

TEST(Json, ErrorsNameFileLineAndColumn) {
  EXPECT_EQ(
      parse_error("{\n  \"a\": 1\n  \"b\": 2\n}"),
      "f.json:3:3: expected ',' or '}' after an object member, got '\"'");
  EXPECT_EQ(parse_error("[1, 2,]"), "f.json:1:7: expected a JSON value, got ']'");
  EXPECT_EQ(parse_error("[1 2]"), "f.json:1:4: expected ',' or ']' after an array element, got '2'");
  EXPECT_EQ(parse_error(""), "f.json:1:1: expected a JSON value, got the end of the input");
  EXPECT_EQ(parse_error("{\"a\": 1} x"), "f.json:1:10: expected the end of the input after the JSON value");
  EXPECT_EQ(parse_error("{\"a\": 1, \"a\": 2}"), "f.json:1:10: duplicate key \"a\"");
  EXPECT_EQ(parse_error("{\"a\" 1}"), "f.json:1:6: expected ':' after an object key, got '1'");
  EXPECT_EQ(parse_error("{1: 2}"), "f.json:1:2: expected a string key, got '1'");
  EXPECT_EQ(parse_error("\"abc"), "f.json:1:1: unterminated string");
  EXPECT_EQ(parse_error("[\"a\nb\"]"), "f.json:1:4: control character byte 0x0A inside a string (escape it)");
  EXPECT_EQ(parse_error("\"\\x\""), "f.json:1:3: invalid escape in a string: a backslash before 'x'");
  // A control byte is named by its code, so the message stays one line.
  EXPECT_EQ(parse_error("\"\\\n\""), "f.json:1:3: invalid escape in a string: a backslash before byte 0x0A");
  EXPECT_EQ(parse_error("01"), "f.json:1:2: leading zeros in a number");
  EXPECT_EQ(
      parse_error("1."), "f.json:1:3: expected a digit after the decimal point, got the end of the input");
  EXPECT_EQ(parse_error("-"), "f.json:1:2: expected a digit, got the end of the input");
  EXPECT_EQ(parse_error("1e"), "f.json:1:3: expected a digit in the exponent, got the end of the input");
  EXPECT_EQ(parse_error("NaN"), "f.json:1:1: expected a JSON value, got 'N'");
  EXPECT_EQ(parse_error("tru"), "f.json:1:1: expected a JSON value, got 't'");
  EXPECT_EQ(parse_error("// c\n1"), "f.json:1:1: expected a JSON value, got '/'");
  EXPECT_EQ(parse_error("1e999"), "f.json:1:1: number out of the range of a double");
}

TEST(Json, RejectsInvalidUtf8AndLoneSurrogates) {
  EXPECT_EQ(parse_error("\"\xC3\""), "f.json:1:2: invalid UTF-8 in a string");          // truncated sequence
  EXPECT_EQ(parse_error("\"\xC0\xAF\""), "f.json:1:2: invalid UTF-8 in a string");      // overlong '/'
  EXPECT_EQ(parse_error("\"\xED\xA0\x80\""), "f.json:1:2: invalid UTF-8 in a string");  // encoded surrogate
  EXPECT_EQ(parse_error("\"\xF4\x90\x80\x80\""), "f.json:1:2: invalid UTF-8 in a string");  // > U+10FFFF
  EXPECT_EQ(parse_error("\"\xFF\""), "f.json:1:2: invalid UTF-8 in a string");
  EXPECT_EQ(parse_error(R"("\udc00")"), "f.json:1:8: lone low surrogate in a \\u escape");
  EXPECT_EQ(parse_error(R"("\ud800x")"), "f.json:1:8: high surrogate not followed by a \\u low surrogate");
  EXPECT_EQ(parse_error(R"("\u12G4")"), "f.json:1:6: expected 4 hex digits after \\u, got 'G'");
}

TEST(Json, RejectsDeepNestingWithoutCrashing) {
  EXPECT_NO_THROW(parse_json(std::string(500, '[') + std::string(500, ']')));
  const std::string deep = std::string(100000, '[');
  EXPECT_EQ(parse_error(deep), "f.json:1:514: nesting deeper than 512 levels");
}

TEST(Json, DumpsCompactAndIndented) {
  Json doc = Json::object({{"b", 1}, {"a", Json::array({true, nullptr, 0.5, "x"})}, {"e", Json::object()}});
  EXPECT_EQ(dump_json(doc), R"({"b":1,"a":[true,null,0.5,"x"],"e":{}})");
  EXPECT_EQ(
      dump_json(doc, 2),
      "{\n  \"b\": 1,\n  \"a\": [\n    true,\n    null,\n    0.5,\n    \"x\"\n  ],\n"
      "  \"e\": {}\n}");
  doc.set("b", "replaced");  // replacing keeps the key's position
  EXPECT_EQ(dump_json(doc), R"({"b":"replaced","a":[true,null,0.5,"x"],"e":{}})");
}

TEST(Json, EscapesStringsOnOutput) {
  EXPECT_EQ(
      dump_json(Json("q\"b\\n\n\x01\x1f/\xC3\xA9")), R"("q\"b\\n\n\u0001\u001f/)"
                                                     "\xC3\xA9\"");
  EXPECT_THROW(dump_json(Json("bad \xFF")), std::invalid_argument);
  EXPECT_THROW(dump_json(Json(std::nan(""))), std::invalid_argument);
  EXPECT_THROW(dump_json(Json(std::numeric_limits<double>::infinity())), std::invalid_argument);
}

TEST(Json, RealsRoundTripExactlyAndStayReal) {
  for (double value : {0.1, 1.0 / 3.0, 2.0, -1e-300, 1e21, 123456.789, 5e-324}) {
    const std::string text = dump_json(Json(value));
    const Json back = parse_json(text);
    EXPECT_EQ(back.type(), Json::Type::real) << text;
    EXPECT_EQ(back.as_double(), value) << text;
  }
  EXPECT_EQ(dump_json(Json(2.0)), "2.0");
  EXPECT_EQ(dump_json(Json(0.1)), "0.1");
}

TEST(Json, DocumentRoundTrip) {
  const std::string text =
      R"({"images":[{"filename":"a.jpg","sentids":[0,1],"sentences":[{"tokens":["a","dog"],"raw":"A dog."}]}],)"
      R"("dataset":"flickr8k","score":-0.25,"ok":false,"none":null,"unicode":"\u00e9\ud83d\ude00"})";
  const Json doc = parse_json(text);
  EXPECT_EQ(parse_json(dump_json(doc)), doc);
  EXPECT_EQ(parse_json(dump_json(doc, 4)), doc);
  EXPECT_EQ(dump_json(parse_json(dump_json(doc))), dump_json(doc));
}

TEST(Json, TypeErrorsNameBothTypes) {
  const Json doc = parse_json(R"({"a": "x", "n": 1.5})");
  try {
    doc.at("a").as_int64();
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "expected an integer, got a string");
  }
  EXPECT_THROW(doc.at("n").as_int64(), std::invalid_argument);
  EXPECT_THROW(doc.at("a").as_array(), std::invalid_argument);
  EXPECT_THROW(doc.at(0), std::invalid_argument);
  try {
    doc.at("zz");
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "missing key \"zz\"");
  }
  EXPECT_THROW(Json::array().at(0), std::invalid_argument);
  EXPECT_THROW(Json(std::numeric_limits<uint64_t>::max()), std::invalid_argument);
  EXPECT_EQ(Json(uint64_t{7}).as_int64(), 7);
}

TEST(Json, FilesRoundTripAndReportPaths) {
  TempDir dir;
  const Json doc = Json::object({{"k", Json::array({1, 2})}});
  write_json_file(dir / "sub" / "a.json", doc, 2);
  EXPECT_EQ(read_file(dir / "sub" / "a.json"), "{\n  \"k\": [\n    1,\n    2\n  ]\n}\n");
  EXPECT_EQ(read_json_file(dir / "sub" / "a.json"), doc);

  EXPECT_THROW(read_json_file(dir / "missing.json"), std::runtime_error);
  EXPECT_THROW(read_json_file(dir.path()), std::runtime_error);
  write_file(dir / "bad.json", "{\"a\": [1,\n 2,,]}");
  try {
    read_json_file(dir / "bad.json");
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()), (dir / "bad.json").string() + ":2:4: expected a JSON value, got ','");
  }
}

}  // namespace
}  // namespace saccade::testing
