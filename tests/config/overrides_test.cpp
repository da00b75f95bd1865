// Config-value overrides (a.b=v, +a.b=v, ++a.b=v, ~a.b[=v]) and the override value grammar,
// checked against Hydra 1.3's behaviour and messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "config/config.h"
#include "config_test_helpers.h"

namespace saccade {
namespace {

using ::testing::ElementsAre;

class OverridesTest : public ConfigTreeTest {
 protected:
  void SetUp() override {
    write(
        "config.yaml",
        "db:\n"
        "  host: localhost\n"
        "  port: 3306\n"
        "  user: null\n"
        "  opts:\n"
        "    a: 1\n"
        "list: [1, 2]\n"
        "name: x\n");
  }
};

// `overrides` composed over a primary config holding `yaml`.
Composition compose_over(const std::string& yaml, const std::vector<std::string>& overrides) {
  testing::TempDir dir;
  testing::write_file(dir / "config.yaml", yaml);
  return saccade::compose({dir.path(), "config", overrides});
}

TEST_F(OverridesTest, ChangeNeedsAnExistingKey) {
  EXPECT_EQ(compose({"db.port=5432"}).config.get<int>("db.port"), 5432);
  EXPECT_EQ(compose({"db.port=1", "db.port=2"}).config.get<int>("db.port"), 2);
  EXPECT_THAT(compose({"list=[3]"}).config.get<std::vector<int>>("list"), ElementsAre(3));
  EXPECT_CONFIG_ERROR(
      compose({"db.prt=1"}),
      "Could not override 'db.prt'. Did you mean 'db.port'? To append to your config use +db.prt=1");
  EXPECT_CONFIG_ERROR(compose({"nope.x=1"}), "Could not override 'nope.x'.");
}

TEST_F(OverridesTest, DictValueMergesIntoExistingKeysOnly) {
  const Composition c = compose({"db={host:h}"});
  EXPECT_EQ(c.config.get<std::string>("db.host"), "h");
  EXPECT_EQ(c.config.get<int>("db.port"), 3306);
  EXPECT_CONFIG_ERROR(
      compose({"db={extra:1}"}), "Could not override 'db'. To append to your config use +db={extra:1}");
}

TEST_F(OverridesTest, AddOnlyWhereNothingIsSet) {
  const Composition c = compose({"+db.password=secret", "+db.user=root", "+fresh.deep=1", "+db.opts={b:2}"});
  EXPECT_EQ(c.config.get<std::string>("db.password"), "secret");
  EXPECT_EQ(c.config.get<std::string>("db.user"), "root");  // a null counts as unset
  EXPECT_EQ(c.config.get<int>("fresh.deep"), 1);
  EXPECT_EQ(c.config.get<int>("db.opts.a"), 1);  // a dict merges even over a set value
  EXPECT_EQ(c.config.get<int>("db.opts.b"), 2);
  EXPECT_CONFIG_ERROR(
      compose({"+db.host=x"}),
      "Could not append to config. An item is already at 'db.host'. "
      "Either remove + prefix: 'db.host=x', or add a second + to add or override 'db.host': "
      "'++db.host=x'");
}

TEST_F(OverridesTest, ForceAddAddsOrChanges) {
  const Composition c = compose({"++db.host=remote", "++new.deep.key=1"});
  EXPECT_EQ(c.config.get<std::string>("db.host"), "remote");
  EXPECT_EQ(c.config.get<int>("new.deep.key"), 1);
}

// As OmegaConf merges them: a list does not replace a mapping, nor a mapping a list; deleting
// first does.
TEST_F(OverridesTest, ListsAndMappingsDoNotReplaceEachOther) {
  EXPECT_CONFIG_ERROR(
      compose({"db=[1,2]"}),
      "Error merging override db=[1,2]: 'db' holds a mapping, which a list cannot be merged into. To replace "
      "it: "
      "~db +db=[1,2]");
  EXPECT_CONFIG_ERROR(
      compose({"++list={a:1}"}),
      "Error merging override ++list={a:1}: 'list' holds a list, which a mapping cannot be merged into. To "
      "replace it: ~list +list={a:1}");
  EXPECT_THAT(compose({"~db", "+db=[1,2]"}).config.get<std::vector<int>>("db"), ElementsAre(1, 2));
  EXPECT_EQ(compose({"db={port:1}"}).config.get<std::string>("db.host"), "localhost");  // merged
}

// A list's items are replaced by index, never added; a forced add may put a mapping in place of
// an item, as OmegaConf.update does.
TEST_F(OverridesTest, ListItemsAreReplacedNotAdded) {
  EXPECT_THAT(compose({"++list.1=9"}).config.get<std::vector<int>>("list"), ElementsAre(1, 9));
  EXPECT_EQ(compose({"+list.0.x=5"}).config.get<int>("list.0.x"), 5);
  EXPECT_EQ(compose({"+list.0.x=5"}).config.get<int>("list.1"), 2);
  for (const char* added : {"+list.5=9", "++list.5=9", "+list.x=1", "++list.2.x=1"}) {
    const std::string key = std::string(added).substr(std::string(added).find_first_not_of('+'));
    EXPECT_CONFIG_ERROR(
        compose({added}), "Error merging override " + std::string(added) + ": '" +
                              key.substr(0, key.find('=')) +
                              "' names no item of its list (a list takes no new items by index)");
  }
}

TEST_F(OverridesTest, DeleteChecksExistenceAndValue) {
  EXPECT_FALSE(compose({"~db.port"}).config.has("db.port"));
  EXPECT_FALSE(compose({"~db.port=3306"}).config.has("db.port"));
  EXPECT_FALSE(compose({"~db"}).config.has("db"));
  EXPECT_CONFIG_ERROR(
      compose({"~db.port=1"}), "Could not delete from config. The value of 'db.port' is 3306 and not 1.");
  EXPECT_CONFIG_ERROR(compose({"~db.nope"}), "Could not delete from config. 'db.nope' does not exist.");
  EXPECT_CONFIG_ERROR(
      compose({"~db.user"}), "Could not delete from config. 'db.user' does not exist.");  // null
}

TEST_F(OverridesTest, InterpolatedValueResolvesAfterAllOverrides) {
  EXPECT_EQ(compose({"name=${db.host}", "db.host=z"}).config.get<std::string>("name"), "z");
}

// Lists, dicts and functions nest by recursion: deep ones are a ConfigError, not a stack
// overflow, and a long value parses in linear time.
TEST_F(OverridesTest, DeepNestingIsRefused) {
  EXPECT_CONFIG_ERROR(
      compose({"++v=" + std::string(40000, '[') + std::string(40000, ']')}),
      "Error parsing override '++v=[[[");
  try {
    compose({"++v=" + std::string(40000, '[') + std::string(40000, ']')});
  } catch (const ConfigError& error) {
    EXPECT_THAT(std::string(error.what()), ::testing::EndsWith(": the value nests deeper than 512 levels"));
  }
  EXPECT_EQ(compose({"++v=" + std::string(500, '[') + "1" + std::string(500, ']')}).config.has("v"), true);
  std::string long_list = "++v=[0";
  for (int i = 1; i < 100000; ++i) long_list += "," + std::to_string(i);
  EXPECT_EQ(compose({long_list + "]"}).config.get<std::vector<int>>("v").size(), 100000u);
}

TEST_F(OverridesTest, MalformedOverrides) {
  EXPECT_CONFIG_ERROR(
      compose({"db@x=1"}),
      "Override 'db@x=1' looks like a config group override, but config group 'db' does not exist.");
  EXPECT_CONFIG_ERROR(compose({"foo"}), "Error parsing override 'foo': missing '='");
  EXPECT_CONFIG_ERROR(compose({"a b=1"}), "Error parsing override 'a b=1': invalid key 'a b'");
  EXPECT_CONFIG_ERROR(compose({"+a=[1,2"}), "Error parsing override '+a=[1,2': missing ']'");
  EXPECT_CONFIG_ERROR(compose({"+a={x 1}"}), "Error parsing override '+a={x 1}': missing ':' in dict");
  EXPECT_CONFIG_ERROR(compose({"+a='open"}), "Error parsing override '+a='open': unterminated quoted string");
  EXPECT_CONFIG_ERROR(compose({"+a=b=c"}), "Error parsing override '+a=b=c': unexpected '='");
  EXPECT_CONFIG_ERROR(compose({"+a=x${b"}), "Error parsing override '+a=x${b': unterminated interpolation");
}

// An interpolation in a list is one element: its quoted commas and braces stay inside it.
TEST_F(OverridesTest, InterpolationInAListKeepsItsQuotedCommasAndBraces) {
  const auto config = compose({"+l=[x${oc.env:SACCADE_NEVER_SET,'a,}b'},c]"}).config;
  EXPECT_EQ(config.get<std::vector<std::string>>("l"), (std::vector<std::string>{"xa,}b", "c"}));
}

// Each value kind of the grammar, printed the way OmegaConf.to_yaml prints what Hydra parses.
TEST(OverrideValues, GrammarTypes) {
  const Composition c = compose_over(
      "", {"+i=1_000", "+f=1e-3", "+nul=null", "+b=TRUE", "+ninf=-inf", "+nn=nan", "+s='1_000'", "+d=\"a,b\"",
           "+l=[a,[b,c]]", "+m={a:10,b:20}", "+sp=  a b  c ", "+e=a\\,b", "+u=${i}", "+z="});
  EXPECT_EQ(
      c.config.to_yaml(false),
      "i: 1000\n"
      "f: 0.001\n"
      "nul: null\n"
      "b: true\n"
      "ninf: -.inf\n"
      "nn: .nan\n"
      "s: '1_000'\n"
      "d: a,b\n"
      "l:\n"
      "- a\n"
      "- - b\n"
      "  - c\n"
      "m:\n"
      "  a: 10\n"
      "  b: 20\n"
      "sp: a b  c\n"
      "e: a,b\n"
      "u: ${i}\n"
      "z: ''\n");
  EXPECT_EQ(c.config.get<int>("i"), 1000);
  EXPECT_DOUBLE_EQ(c.config.get<double>("f"), 1e-3);
  EXPECT_FALSE(c.config.get_optional<int>("nul").has_value());
  EXPECT_TRUE(c.config.get<bool>("b"));
  // Composed as Hydra composes them; no setting reads an infinity or a NaN as a number.
  EXPECT_CONFIG_ERROR(c.config.get<double>("ninf"), "ninf: expected a finite number, got '-.inf'");
  EXPECT_CONFIG_ERROR(c.config.get<double>("nn"), "nn: expected a finite number, got '.nan'");
  EXPECT_EQ(c.config.get<int>("u"), 1000);
}

// Hydra's casts and sort() applied to one value, worked by Python's int(), float(), str(),
// bool() and sorted().
TEST(OverrideValues, CastsAndSortOfValues) {
  const Composition c = compose_over(
      "", {"+i=int(-3.7)", "+f=float('1_0')", "+s=str(1)", "+t=str(true)", "+r=str(0.1)", "+b=bool(FALSE)",
           "+l=int([1.5,'2',true])", "+m=float({a:1})", "+sorted=sort([b,a,C])",
           "+down=sort(list=[1,3,2],reverse=true)", "+named=int(value=2.9)"});
  EXPECT_EQ(
      c.config.to_yaml(false),
      "i: -3\nf: 10.0\ns: '1'\nt: 'true'\nr: '0.1'\nb: false\nl:\n- 1\n- 2\n- 1\nm:\n  a: 1.0\n"
      "sorted:\n- C\n- a\n- b\ndown:\n- 3\n- 2\n- 1\nnamed: 2\n");
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+x=int(abc)"}), "Error parsing override '+x=int(abc)': int() cannot convert 'abc'");
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+x=bool(yes)"}),
      "Error parsing override '+x=bool(yes)': bool() cannot convert 'yes'");
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+x=int(inf)"}), "Error parsing override '+x=int(inf)': int() cannot convert inf");
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+x=float(null)"}),
      "Error parsing override '+x=float(null)': float() cannot convert null");
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+x=sort([1,a])"}),
      "Error parsing override '+x=sort([1,a])': sort() cannot order a and 1");
}

// Text the grammar leaves a string converts as OmegaConf converts a string: by Python's int()
// and float() ("010" is 10, not YAML's octal 8; hex and base 60 are no numbers), where a YAML
// file's plain 010 and 0x10 are YAML 1.1 integers.
TEST(OverrideValues, StringsConvertByPythonsRules) {
  const Composition c = compose_over(
      "octal: 010\nhex: 0x10\n", {"+leading=010", "+long=0200000000", "+quoted=' 1_0 '", "+real='010.5'",
                                  "+x=0x10", "+clock=9:00", "+under='1__0'"});
  EXPECT_EQ(c.config.get<int>("octal"), 8);
  EXPECT_EQ(c.config.get<int>("hex"), 16);
  EXPECT_EQ(c.config.get<int>("leading"), 10);
  EXPECT_EQ(c.config.get<int>("long"), 200000000);
  EXPECT_EQ(c.config.get<int>("quoted"), 10);
  EXPECT_DOUBLE_EQ(c.config.get<double>("leading"), 10.0);
  EXPECT_DOUBLE_EQ(c.config.get<double>("real"), 10.5);
  EXPECT_CONFIG_ERROR(c.config.get<int>("x"), "x: expected an integer, got '0x10'");
  EXPECT_CONFIG_ERROR(c.config.get<double>("x"), "x: expected a number, got '0x10'");
  EXPECT_CONFIG_ERROR(c.config.get<int>("clock"), "clock: expected an integer, got '9:00'");
  EXPECT_CONFIG_ERROR(c.config.get<int>("under"), "under: expected an integer, got '1__0'");
}

TEST(OverrideValues, FloatSpellings) {
  const Composition c = compose_over(
      "", {"+a=-.5", "+b=.5e3", "+c=1e1_0", "+d=5.", "+e=1_0.2_5", "+g=Inf", "+h=05", "+k=1e16", "+big=1e400",
           "+small=-1e-400", "+sub=1e-310"});
  // Beyond the doubles Python's float() saturates: 1e400 is inf, 1e-400 is 0.
  EXPECT_EQ(
      c.config.to_yaml(false),
      "a: -0.5\nb: 500.0\nc: 10000000000.0\nd: 5.0\ne: 10.25\ng: .inf\nh: '05'\nk: 1.0e+16\nbig: .inf\n"
      "small: -0.0\nsub: 1.0e-310\n");
}

TEST(OverrideValues, TextThatIsNotUtf8IsRefused) {
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+name=caf\xE9"}),
      "Override '+name=caf\\xE9' is not valid UTF-8 (at byte 9); pass text in UTF-8");
  EXPECT_EQ(compose_over("", {"+name='caf\xC3\xA9'"}).config.get<std::string>("name"), "caf\xC3\xA9");
}

// Unquoted text holds only what Hydra's lexer takes: ASCII letters, digits, _ - / + . $ % * @ ? |
// \ : and blanks. Any other character is its token recognition error; quoted, it is kept.
TEST(OverrideValues, CharactersOutsideTheUnquotedSetAreRefused) {
  for (const std::string character :
       {"!", "#", "&", "~", "^", ";", "<", ">", "`", "\xC3\xA9", "\xE2\x82\xAC"}) {
    SCOPED_TRACE(character);
    EXPECT_CONFIG_ERROR(
        compose_over("", {"+name=run" + character + "1"}), "Error parsing override '+name=run" + character +
                                                               "1': token recognition error at: '" +
                                                               character + "' (quote a value holding it)");
    EXPECT_EQ(
        compose_over("", {"+name='run" + character + "1'"}).config.get<std::string>("name"),
        "run" + character + "1");
  }
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+l=[a,b\x01]"}),
      "Error parsing override '+l=[a,b\\u0001]': token recognition error at: '\\u0001' (quote a value "
      "holding it)");
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+d={k#:1}"}), "Error parsing override '+d={k#:1}': token recognition error at: '#'");
  EXPECT_CONFIG_ERROR(
      compose_over("", {"+x=choice(a,b!)"}),
      "Error parsing override '+x=choice(a,b!)': token recognition error at: '!'");
  const auto kept = compose_over("", {"+p=/a-b_c/+d.e$f%g*h@i?j|k\\l:m n"}).config;
  EXPECT_EQ(kept.get<std::string>("p"), "/a-b_c/+d.e$f%g*h@i?j|k\\l:m n");
}

TEST(OverrideValues, QuotesAndEscapes) {
  const Composition c = compose_over(
      "", {"+q='it\\'s'", "+dq=\"say \\\"hi\\\"\"", "+path=C:\\dir", "+url=http://x:80/a", "+sp=a\\ ",
           "+bs=a\\\\ ", "+bsp=a\\\\\\ "});
  EXPECT_EQ(c.config.get<std::string>("q"), "it's");
  EXPECT_EQ(c.config.get<std::string>("dq"), "say \"hi\"");
  EXPECT_EQ(c.config.get<std::string>("path"), "C:\\dir");
  EXPECT_EQ(c.config.get<std::string>("url"), "http://x:80/a");
  EXPECT_EQ(c.config.get<std::string>("sp"), "a ");
  // An escaped backslash before a trailing blank: the blank is trimmed, as Hydra's WS token is.
  EXPECT_EQ(c.config.get<std::string>("bs"), "a\\");
  EXPECT_EQ(c.config.get<std::string>("bsp"), "a\\ ");
}

}  // namespace
}  // namespace saccade
