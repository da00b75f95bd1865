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
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=glob(*)"}), "Error parsing override 'a=glob(*)': unsupported function 'glob'");
  EXPECT_CONFIG_ERROR(
      expand_sweeps({"a=[1,choice(2,3)]"}), "Error parsing override 'a=[1,choice(2,3)]': sweeps cannot");

  testing::TempDir dir;
  testing::write_file(dir / "config.yaml", "a: 1\n");
  EXPECT_CONFIG_ERROR(compose({dir.path(), "config", {"a=1,2"}}), "Ambiguous value for argument 'a=1,2'");
}

}  // namespace
}  // namespace saccade
