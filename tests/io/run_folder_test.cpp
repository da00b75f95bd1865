// Run folders: the records written and the refusal to reuse a non-empty folder.
#include "io/run_folder.h"

#include <gtest/gtest.h>

#include "io/log.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

Composition tiny_composition() {
  Composition composition;
  composition.config = Config(YAML::Load("seed: 5\nname: ${.other}\nother: x\n"));
  composition.choices = {{"dataset", std::string("shapes")}, {"experiment", std::nullopt}};
  return composition;
}

TEST(RunFolder, WritesResolvedConfigOverridesAndRecord) {
  TempDir dir;
  const auto run = dir / "run";
  create_run_folder(run, tiny_composition(), RunRecord{"train", {"saccade", "train", "seed=5"}, {"seed=5"}});
  log::info() << "into the log";
  log::set_file("");

  const YAML::Node config = YAML::LoadFile((run / "config.yaml").string());
  EXPECT_EQ(config["name"].as<std::string>(), "x");
  const YAML::Node overrides = YAML::LoadFile((run / "overrides.yaml").string());
  ASSERT_EQ(overrides.size(), 1u);
  EXPECT_EQ(overrides[0].as<std::string>(), "seed=5");
  const YAML::Node record = YAML::LoadFile((run / "run.yaml").string());
  EXPECT_EQ(record["argv"][2].as<std::string>(), "seed=5");
  EXPECT_EQ(record["choices"]["dataset"].as<std::string>(), "shapes");
  EXPECT_TRUE(record["choices"]["experiment"].IsNull());
  EXPECT_EQ(record["version"].as<std::string>(), saccade_version());
  EXPECT_NE(read_file(run / "train.log").find("into the log"), std::string::npos);
}

TEST(RunFolder, RefusesNonEmptyFolder) {
  TempDir dir;
  write_file(dir / "run/keep.txt", "precious");
  EXPECT_THROW(
      create_run_folder(dir / "run", tiny_composition(), RunRecord{"train", {}, {}}), std::runtime_error);
  EXPECT_EQ(read_file(dir / "run/keep.txt"), "precious");
}

TEST(RunFolder, AtomicWriteReplacesWholeFile) {
  TempDir dir;
  write_file_atomically(dir / "a/b.txt", "first");
  write_file_atomically(dir / "a/b.txt", "second");
  EXPECT_EQ(read_file(dir / "a/b.txt"), "second");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir / "a")) ++files;
  EXPECT_EQ(files, 1);  // no temporary left behind
}

}  // namespace
}  // namespace saccade::testing
