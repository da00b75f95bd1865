// Multirun expansion (Hydra's basic sweeper: cartesian product, first key slowest) and the
// single-run rejection of sweeps with Hydra's message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config.h"
#include "config_test_helpers.h"

namespace saccade {
namespace {

using ::testing::ElementsAre;
using Jobs = std::vector<std::vector<std::string>>;

TEST(Sweeps, CartesianProductFirstKeySlowest) {
  EXPECT_EQ(
      expand_sweeps({"a=1,2", "b=x,y,z"}),
      (Jobs{{"a=1", "b=x"}, {"a=1", "b=y"}, {"a=1", "b=z"}, {"a=2", "b=x"}, {"a=2", "b=y"}, {"a=2", "b=z"}}));
  EXPECT_EQ(expand_sweeps({"c=5", "+db=mysql, pg"}), (Jobs{{"c=5", "+db=mysql"}, {"c=5", "+db=pg"}}));
  EXPECT_EQ(expand_sweeps({}), (Jobs{{}}));
}

TEST(Sweeps, RangeAndChoice) {
  EXPECT_EQ(expand_sweeps({"a=range(1,4)"}), (Jobs{{"a=1"}, {"a=2"}, {"a=3"}}));
  EXPECT_EQ(expand_sweeps({"a=range(5,0,-2)"}), (Jobs{{"a=5"}, {"a=3"}, {"a=1"}}));
  EXPECT_EQ(expand_sweeps({"a=range(0,1,0.25)"}), (Jobs{{"a=0.0"}, {"a=0.25"}, {"a=0.5"}, {"a=0.75"}}));
  EXPECT_EQ(expand_sweeps({"a=range(0,0.3,0.1)"}), (Jobs{{"a=0.0"}, {"a=0.1"}, {"a=0.2"}}));
  EXPECT_EQ(expand_sweeps({"a=range(start=1,stop=3)"}), (Jobs{{"a=1"}, {"a=2"}}));
  EXPECT_EQ(expand_sweeps({"a=choice(x,'y,z')"}), (Jobs{{"a=x"}, {"a='y,z'"}}));
  EXPECT_EQ(expand_sweeps({"a=[1,2],[3]"}), (Jobs{{"a=[1,2]"}, {"a=[3]"}}));
}

TEST(Sweeps, RangeTakesPythonsArguments) {
  // range(stop) counts from 0; step may be named; Hydra 1.3's range(start, stop=None, step=1).
  EXPECT_EQ(expand_sweeps({"a=range(3)"}), (Jobs{{"a=0"}, {"a=1"}, {"a=2"}}));
  EXPECT_EQ(expand_sweeps({"a=range(-3, step=-1)"}), (Jobs{{"a=0"}, {"a=-1"}, {"a=-2"}}));
  EXPECT_EQ(expand_sweeps({"a=range(step=2, stop=5, start=1)"}), (Jobs{{"a=1"}, {"a=3"}}));
  // Integers stay exact past 2^53, and a step past 2^63 ends the range.
  EXPECT_EQ(
      expand_sweeps({"a=range(9007199254740993,9007199254740995)"}),
      (Jobs{{"a=9007199254740993"}, {"a=9007199254740994"}}));
  EXPECT_EQ(
      expand_sweeps({"a=range(9223372036854775806,9223372036854775807,5)"}),
      (Jobs{{"a=9223372036854775806"}}));
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=range(stop=3)"}), "Error parsing override 'a=range(stop=3)': range() needs start");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=range(1,2,3,4)"}),
      "Error parsing override 'a=range(1,2,3,4)': range() takes at most 3");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=range(1,start=2)"}),
      "Error parsing override 'a=range(1,start=2)': range() got two values for 'start'");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=range(1,end=2)"}),
      "Error parsing override 'a=range(1,end=2)': range() has no argument 'end'");
}

// Float ranges as Hydra's FloatRange counts them: the step added to a Python Decimal made exactly
// from the start, each sum rounded to 28 digits; the expected values are what that class gives
// (Python 3.11), stop included where the rounded sum falls short of it.
TEST(Sweeps, FloatRangesStepAsHydrasDecimals) {
  const auto values = [](const std::string& range) {
    std::vector<std::string> out;
    for (const auto& job : expand_sweeps({"a=" + range})) out.push_back(job.at(0).substr(2));
    return out;
  };
  using Values = std::vector<std::string>;
  EXPECT_EQ(values("range(0.5,0.9,0.1)"), (Values{"0.5", "0.6", "0.7", "0.8", "0.9"}));
  EXPECT_EQ(values("range(0,0.3,0.3)"), (Values{"0.0", "0.3"}));
  EXPECT_EQ(
      values("range(0,1,0.1)"),
      (Values{"0.0", "0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7000000000000001", "0.8", "0.9"}));
  EXPECT_EQ(
      values("range(1,0,-0.1)"), (Values{
                                     "1.0", "0.9", "0.8", "0.7", "0.6", "0.5", "0.39999999999999997", "0.3",
                                     "0.19999999999999996", "0.09999999999999995"}));
  EXPECT_EQ(values("range(0.3,2.1,0.1)").size(), 19u);
  EXPECT_EQ(values("range(0.3,2.1,0.1)").back(), "2.1");
  EXPECT_EQ(values("range(-0.7,0.35,0.35)"), (Values{"-0.7", "-0.35", "-3.1308084726333618e-30"}));
  EXPECT_EQ(values("range(2.5,1e16,1e15)").at(5), "5000000000000002.0");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=range(0,inf,0.5)"}),
      "Error parsing override 'a=range(0,inf,0.5)': range() bounds must be finite numbers");
}

TEST(Sweeps, GlobSweepsAGroupsMatchingOptions) {
  testing::TempDir dir;
  for (const char* option : {"coco", "shapes", "shapes_small", "Shapes_big"})
    testing::write_file(dir / "dataset" / (std::string(option) + ".yaml"), "x: 1\n");
  // Options in sorted order; patterns as Python's fnmatch reads them (case-sensitive).
  EXPECT_EQ(
      expand_sweeps({"dataset=glob(*)"}, dir.path()),
      (Jobs{{"dataset=Shapes_big"}, {"dataset=coco"}, {"dataset=shapes"}, {"dataset=shapes_small"}}));
  EXPECT_EQ(
      expand_sweeps({"dataset=glob(shapes*,exclude=*small)", "b=1,2"}, dir.path()),
      (Jobs{{"dataset=shapes", "b=1"}, {"dataset=shapes", "b=2"}}));
  EXPECT_EQ(
      expand_sweeps({"+dataset@val=glob([c*,?hapes],exclude=[])"}, dir.path()),
      (Jobs{{"+dataset@val=coco"}, {"+dataset@val=shapes"}}));
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"dataset=glob(x*)"}, dir.path()),
      "The sweep 'dataset=glob(x*)' matches no option of the config group 'dataset'");
}

// Patterns as Python's fnmatch.fnmatchcase reads them (the expected options are what it selects
// from these names): '^' is a plain character, a backwards range is dropped with its ends, a '-'
// first or last is plain, a '[' without its ']' is plain, '?' is one code point.
TEST(Sweeps, GlobMatchesAsPythonsFnmatch) {
  testing::TempDir dir;
  const std::vector<std::string> options = {
      "-",
      "[x",
      "^x",
      "a-",
      "a^b",
      "b!",
      "c-at",
      "cat",
      "dog",
      "z",
      "\xC3\xA9"
      "1"};
  for (const auto& option : options) testing::write_file(dir / "dataset" / (option + ".yaml"), "x: 1\n");
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases = {
      {"[^a]*", {"^x", "a-", "a^b"}},
      {"[!a]*",
       {"-", "\\[x", "^x", "b!", "c-at", "cat", "dog", "z",
        "\xC3\xA9"
        "1"}},
      {"[!^]*",
       {"-", "\\[x", "a-", "a^b", "b!", "c-at", "cat", "dog", "z",
        "\xC3\xA9"
        "1"}},
      {"[x", {"\\[x"}},
      {"[c-a-z]*", {"-", "z"}},
      {"[a-]*", {"-", "a-", "a^b"}},
      {"[!-a]*",
       {"\\[x", "^x", "b!", "c-at", "cat", "dog", "z",
        "\xC3\xA9"
        "1"}},
      {"[--z]?*", {"\\[x", "^x", "a-", "a^b", "b!", "c-at", "cat", "dog"}},
      {"[\xC3\xA0-\xC3\xBF"
       "]?",
       {"\xC3\xA9"
        "1"}},
      {"*[!t]",
       {"-", "\\[x", "^x", "a-", "a^b", "b!", "dog", "z",
        "\xC3\xA9"
        "1"}},
      {"?", {"-", "z"}},
      {"[^]*", {"^x"}},
  };
  for (const auto& [pattern, selected] : cases) {
    SCOPED_TRACE(pattern);
    Jobs expected;
    for (const auto& option : selected) expected.push_back({"dataset=" + option});
    EXPECT_EQ(expand_sweeps({"dataset=glob('" + pattern + "')"}, dir.path()), expected);
  }
  for (const std::string pattern : {"[]x]*", "[z-a]*", "[!]"}) {
    EXPECT_CONFIG_ERROR(
        expand_sweeps({"dataset=glob('" + pattern + "')"}, dir.path()),
        "The sweep 'dataset=glob('" + pattern + "')' matches no option of the config group 'dataset'");
  }
}

// A call takes its arguments as Python does: separated by commas, none after a trailing one, and
// no value by position after a named one. A dict a cast gives keeps its keys bare in the job.
TEST(Sweeps, CallsAreWrittenAsHydrasGrammarWantsThem) {
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=choice([1][2])"}),
      "Error parsing override 'a=choice([1][2])': unexpected '[' in the arguments of choice()");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=choice(x,)"}),
      "Error parsing override 'a=choice(x,)': choice() has a ',' with no argument after it");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=range(stop=5,1)"}),
      "Error parsing override 'a=range(stop=5,1)': range() takes a value by position after a named one");
  EXPECT_EQ(expand_sweeps({"+x=int(choice({1:1.5},{a\\ b:2.5}))"}), (Jobs{{"+x={1:1}"}, {"+x={a\\ b:2}"}}));
  EXPECT_EQ(expand_sweeps({"a=choice( x , y )"}), (Jobs{{"a=x"}, {"a=y"}}));
}

TEST(Sweeps, SortAndTag) {
  EXPECT_EQ(expand_sweeps({"a=sort(3,1,2.5)"}), (Jobs{{"a=1"}, {"a=2.5"}, {"a=3"}}));
  EXPECT_EQ(expand_sweeps({"a=sort(choice(b,'a c',B),reverse=true)"}), (Jobs{{"a=b"}, {"a='a c'"}, {"a=B"}}));
  // Sorted values, not the range's bounds turned about: 4 2 0, where Hydra 1.3.2 gave 3 1 -1.
  EXPECT_EQ(expand_sweeps({"a=sort(range(0,5,2),reverse=true)"}), (Jobs{{"a=4"}, {"a=2"}, {"a=0"}}));
  EXPECT_EQ(expand_sweeps({"a=sort(sweep=range(3,0,-1))"}), (Jobs{{"a=1"}, {"a=2"}, {"a=3"}}));
  EXPECT_EQ(expand_sweeps({"a=tag(fast,slow,choice(1,2))"}), (Jobs{{"a=1"}, {"a=2"}}));
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=sort(1,x)"}), "Error parsing override 'a=sort(1,x)': sort() cannot order x and 1");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=tag(x,1)"}), "Error parsing override 'a=tag(x,1)': tag() needs a sweep");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=shuffle(1,2)"}),
      "Error parsing override 'a=shuffle(1,2)': shuffle() is not supported");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=interval(0,1)"}),
      "Error parsing override 'a=interval(0,1)': interval() is a continuous");
}

TEST(Sweeps, CastsConvertEachValue) {
  EXPECT_EQ(expand_sweeps({"a=int(choice(1.5,-2.5,'7'))"}), (Jobs{{"a=1"}, {"a=-2"}, {"a=7"}}));
  EXPECT_EQ(expand_sweeps({"a=float(range(1,3))"}), (Jobs{{"a=1.0"}, {"a=2.0"}}));
  EXPECT_EQ(expand_sweeps({"a=int(range(0.5,3.5))"}), (Jobs{{"a=0"}, {"a=1"}, {"a=2"}}));
  EXPECT_EQ(expand_sweeps({"a=bool(0,2)"}), (Jobs{{"a=false"}, {"a=true"}}));
  // A str() value stays a string in its job (Hydra's basic sweeper passes it bare, read as 1).
  EXPECT_EQ(expand_sweeps({"a=str(choice(1,true,x))"}), (Jobs{{"a='1'"}, {"a='true'"}, {"a=x"}}));
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=str(range(3))"}),
      "Error parsing override 'a=str(range(3))': a range() can only be cast to int or float");
}

TEST(Sweeps, NotSweeps) {
  EXPECT_EQ(
      expand_sweeps({"a='x,y'", "b=[1,2]", "c=a\\,b", "d={p:1,q:2}"}),
      (Jobs{{"a='x,y'", "b=[1,2]", "c=a\\,b", "d={p:1,q:2}"}}));
  EXPECT_NO_THROW(reject_sweeps({"a='x,y'", "b=[1,2]", "c=a\\,b", "d={p:1,q:2}", "~e"}));
}

TEST(Sweeps, RepeatedKeyKeepsFirstPosition) {
  EXPECT_EQ(expand_sweeps({"a=1,2", "b=3", "a=5"}), (Jobs{{"a=5", "b=3"}}));
}

TEST(Sweeps, RejectedInSingleRuns) {
  EXPECT_CONFIG_ERROR(
      reject_sweeps({"x=1", "a=1,2"}),
      "Ambiguous value for argument 'a=1,2': "
      "1. To use it as a list, use key=[value1,value2]; "
      "2. To use it as string, quote the value: key=\\'value1,value2\\'; "
      "3. To sweep over it, add --multirun to your command line");
  EXPECT_CONFIG_ERROR(reject_sweeps({"a=range(1,3)"}), "Sweep parameters 'a=range(1,3)' requires --multirun");
  EXPECT_CONFIG_ERROR(
      reject_sweeps({"a=choice(1,2)"}), "Sweep parameters 'a=choice(1,2)' requires --multirun");
  EXPECT_CONFIG_ERROR(reject_sweeps({"a=glob(*)"}), "Sweep parameters 'a=glob(*)' requires --multirun");
  EXPECT_CONFIG_ERROR(reject_sweeps({"a=sort(2,1)"}), "Ambiguous value for argument 'a=sort(2,1)'");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=[1,choice(2,3)]"}), "Error parsing override 'a=[1,choice(2,3)]': sweeps cannot");

  testing::TempDir dir;
  testing::write_file(dir / "config.yaml", "a: 1\n");
  EXPECT_CONFIG_ERROR(compose({dir.path(), "config", {"a=1,2"}}), "Ambiguous value for argument 'a=1,2'");
}

}  // namespace
}  // namespace saccade
