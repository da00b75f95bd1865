// Composition: defaults-list order, packages, group overrides from files and the command line,
// and the errors Hydra 1.3 gives for each. Expectations are worked by hand from Hydra's rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "config_test_helpers.h"

namespace saccade {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

// "config_path|package|parent", plus "|self" for a `_self_` entry.
std::vector<std::string> describe(const std::vector<DefaultsEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& entry : entries) {
    out.push_back(
        entry.config_path + "|" + entry.package + "|" + entry.parent + (entry.is_self ? "|self" : ""));
  }
  return out;
}

// A tree like saccade's: groups dataset/encoder, a nested group under encoder, an experiment.
class ComposeTest : public ConfigTreeTest {
 protected:
  void SetUp() override {
    write(
        "config.yaml",
        "defaults:\n"
        "  - dataset: shapes\n"
        "  - encoder: small_cnn\n"
        "  - _self_\n"
        "  - experiment: null\n"
        "seed: 1\n"
        "train:\n"
        "  lr: 0.01\n"
        "  batch_size: 32\n");
    write("dataset/shapes.yaml", "name: shapes\nsize: 64\n");
    write("dataset/coco.yaml", "name: coco\nsize: 224\n");
    write("encoder/small_cnn.yaml", "channels: 32\n");
    write("encoder/resnet.yaml", "defaults:\n  - block: basic\n  - _self_\ndepth: 18\n");
    write("encoder/block/basic.yaml", "expansion: 1\n");
    write("encoder/block/bottleneck.yaml", "expansion: 4\n");
    write(
        "experiment/smoke.yaml",
        "# @package _global_\n"
        "defaults:\n"
        "  - override /dataset: coco\n"
        "  - override /encoder: resnet\n"
        "train:\n"
        "  lr: 0.1\n");
  }
};

TEST_F(ComposeTest, DefaultsListOrderPackagesAndChoices) {
  const Composition c = compose();
  EXPECT_THAT(
      describe(c.defaults),
      ElementsAre("dataset/shapes|dataset|config", "encoder/small_cnn|encoder|config", "config|||self"));
  EXPECT_THAT(
      c.choices,
      ElementsAre(Pair("dataset", "shapes"), Pair("encoder", "small_cnn"), Pair("experiment", std::nullopt)));
  EXPECT_EQ(
      c.config.to_yaml(),
      "dataset:\n"
      "  name: shapes\n"
      "  size: 64\n"
      "encoder:\n"
      "  channels: 32\n"
      "seed: 1\n"
      "train:\n"
      "  lr: 0.01\n"
      "  batch_size: 32\n");
}

TEST_F(ComposeTest, ExperimentOverridesGroupsListedBeforeIt) {
  const Composition c = compose({"experiment=smoke"});
  EXPECT_THAT(
      describe(c.defaults),
      ElementsAre(
          "dataset/coco|dataset|config", "encoder/block/basic|encoder.block|encoder/resnet",
          "encoder/resnet|encoder|config|self", "config|||self", "experiment/smoke||config"));
  EXPECT_THAT(
      c.choices, ElementsAre(
                     Pair("dataset", "coco"), Pair("encoder", "resnet"), Pair("encoder/block", "basic"),
                     Pair("experiment", "smoke")));
  EXPECT_EQ(c.config.get<std::string>("dataset.name"), "coco");
  EXPECT_EQ(c.config.get<int>("encoder.depth"), 18);
  EXPECT_FALSE(c.config.has("encoder.channels"));
  EXPECT_DOUBLE_EQ(c.config.get<double>("train.lr"), 0.1);  // experiment content after _self_
  EXPECT_EQ(c.config.get<int>("train.batch_size"), 32);     // merged, not replaced
}

TEST_F(ComposeTest, CommandLineBeatsExperimentOverridesInAnyOrder) {
  for (const auto& overrides :
       {std::vector<std::string>{"experiment=smoke", "dataset=shapes"},
        std::vector<std::string>{"dataset=shapes", "experiment=smoke"}}) {
    const Composition c = compose(overrides);
    EXPECT_EQ(c.config.get<std::string>("dataset.name"), "shapes");
    EXPECT_EQ(c.config.get<int>("encoder.depth"), 18);
  }
}

TEST_F(ComposeTest, ChangedOptionLoadsItsOwnDefaults) {
  EXPECT_EQ(compose({"encoder=resnet"}).config.get<int>("encoder.block.expansion"), 1);
  EXPECT_EQ(
      compose({"encoder=resnet", "encoder/block=bottleneck"}).config.get<int>("encoder.block.expansion"), 4);
}

TEST_F(ComposeTest, SelfPositionDecidesWhoWins) {
  write("config.yaml", "defaults:\n  - _self_\n  - dataset: shapes\ndataset:\n  size: 10\n  extra: 1\n");
  Composition c = compose();
  EXPECT_EQ(c.config.get<int>("dataset.size"), 64);
  EXPECT_EQ(c.config.get<int>("dataset.extra"), 1);
  EXPECT_THAT(describe(c.defaults), ElementsAre("config|||self", "dataset/shapes|dataset|config"));

  write("config.yaml", "defaults:\n  - dataset: shapes\n  - _self_\ndataset:\n  size: 10\n");
  EXPECT_EQ(compose().config.get<int>("dataset.size"), 10);

  write("config.yaml", "defaults:\n  - dataset: shapes\ndataset:\n  size: 10\n");  // _self_ appended last
  c = compose();
  EXPECT_EQ(c.config.get<int>("dataset.size"), 10);
  EXPECT_THAT(describe(c.defaults), ElementsAre("dataset/shapes|dataset|config", "config|||self"));
}

TEST_F(ComposeTest, MergeRules) {
  // Mappings merge, lists and scalars are replaced, and `???` keeps a value set earlier.
  write(
      "config.yaml",
      "defaults:\n  - dataset: shapes\n  - _self_\n"
      "dataset:\n  size: ???\n  name: [a, b]\n  fresh: ???\n");
  write("dataset/shapes.yaml", "name: [x, y, z]\nsize: 64\n");
  EXPECT_EQ(compose().config.to_yaml(), "dataset:\n  name:\n  - a\n  - b\n  size: 64\n  fresh: ???\n");
}

TEST_F(ComposeTest, PackagesRelocateContent) {
  write(
      "config.yaml",
      "defaults:\n"
      "  - dataset@data.train: shapes\n"
      "  - dataset@data.val: coco\n"
      "  - misc: globals\n"
      "  - misc@late: late\n");
  write("misc/globals.yaml", "# @package _global_\ntop: 1\n");
  // Hydra reads `# @package` only before any other line, comments included.
  write("misc/late.yaml", "# Not a header any more.\n# @package _global_\nlate_key: 2\n");
  const Composition c = compose({"dataset@data.val=shapes"});
  EXPECT_EQ(c.config.get<std::string>("data.train.name"), "shapes");
  EXPECT_EQ(c.config.get<std::string>("data.val.name"), "shapes");
  EXPECT_EQ(c.config.get<int>("top"), 1);
  EXPECT_EQ(c.config.get<int>("late.late_key"), 2);
  EXPECT_FALSE(c.config.has("misc"));
  EXPECT_THAT(
      describe(c.defaults), ElementsAre(
                                "dataset/shapes|data.train|config", "dataset/shapes|data.val|config",
                                "misc/globals||config", "misc/late|late|config", "config|||self"));
  EXPECT_CONFIG_ERROR(
      compose({"dataset=coco"}),
      "Could not override 'dataset'. "
      "Did you mean to override one of dataset@data.train, dataset@data.val? "
      "To append to your default list use +dataset=coco");
}

TEST_F(ComposeTest, NestedGroupsAndIncludes) {
  write("config.yaml", "defaults:\n  - server/db: mysql\n  - shared/common\n");
  write("server/db/mysql.yaml", "port: 3306\n");
  write("server/db/pg.yaml", "port: 5432\n");
  write("shared/common.yaml", "x: 1\n");
  Composition c = compose();
  EXPECT_EQ(c.config.get<int>("server.db.port"), 3306);
  EXPECT_EQ(c.config.get<int>("shared.x"), 1);
  EXPECT_THAT(c.choices, ElementsAre(Pair("server/db", "mysql")));
  EXPECT_EQ(compose({"server/db=pg"}).config.get<int>("server.db.port"), 5432);

  // An include inside a group option is relative to that group and package.
  write("config.yaml", "defaults:\n  - encoder: resnet50\n");
  write("encoder/resnet50.yaml", "defaults:\n  - parts/head\n  - _self_\ndepth: 50\n");
  write("encoder/parts/head.yaml", "dim: 7\n");
  c = compose();
  EXPECT_EQ(c.config.get<int>("encoder.parts.dim"), 7);
  EXPECT_THAT(
      describe(c.defaults), ElementsAre(
                                "encoder/parts/head|encoder.parts|encoder/resnet50",
                                "encoder/resnet50|encoder|config|self", "config|||self"));
}

TEST_F(ComposeTest, OptionListMergesEachOption) {
  write("config.yaml", "defaults:\n  - dataset: [shapes, coco]\n");
  const Composition c = compose();
  EXPECT_EQ(c.config.get<std::string>("dataset.name"), "coco");
  EXPECT_THAT(
      describe(c.defaults),
      ElementsAre("dataset/shapes|dataset|config", "dataset/coco|dataset|config", "config|||self"));
  EXPECT_THAT(c.choices, ElementsAre(Pair("dataset", "['shapes', 'coco']")));
}

TEST_F(ComposeTest, ChoiceInterpolation) {
  write(
      "config.yaml",
      "defaults:\n  - dataset: shapes\n  - encoder: small_cnn\n  - combo: ${dataset}_${encoder}\n");
  write("combo/shapes_small_cnn.yaml", "v: a\n");
  write("combo/coco_resnet.yaml", "v: b\n");
  EXPECT_EQ(compose().config.get<std::string>("combo.v"), "a");
  EXPECT_EQ(compose({"dataset=coco", "encoder=resnet"}).config.get<std::string>("combo.v"), "b");
  EXPECT_THAT(compose().choices.back(), Pair("combo", "shapes_small_cnn"));
  // Hydra's message, and the config whose defaults list holds the interpolation.
  write("config.yaml", "defaults:\n  - dataset: shapes\n  - combo: ${datset}\n");
  EXPECT_CONFIG_ERROR(
      compose(),
      "In 'config': Error resolving interpolation '${datset}', possible interpolation keys: dataset");
}

TEST_F(ComposeTest, AppendAndDeleteGroups) {
  write("extra/one.yaml", "v: 1\n");
  Composition c = compose({"+extra=one"});
  EXPECT_EQ(c.config.get<int>("extra.v"), 1);
  EXPECT_EQ(describe(c.defaults).back(), "extra/one|extra|config");

  c = compose({"~encoder"});
  EXPECT_FALSE(c.config.has("encoder"));
  EXPECT_THAT(describe(c.defaults), ElementsAre("dataset/shapes|dataset|config", "config|||self"));
  EXPECT_FALSE(compose({"~encoder=small_cnn"}).config.has("encoder"));
  EXPECT_CONFIG_ERROR(
      compose({"~encoder=resnet"}), "Could not delete 'encoder=resnet'. No match in the defaults list");
}

TEST_F(ComposeTest, OptionalGroupMayBeMissing) {
  write("extra/one.yaml", "v: 1\n");
  write("config.yaml", "defaults:\n  - optional extra: nope\nx: 1\n");
  const Composition c = compose();
  EXPECT_EQ(c.config.get<int>("x"), 1);
  EXPECT_FALSE(c.config.has("extra"));
  write("config.yaml", "defaults:\n  - extra: nope\nx: 1\n");
  EXPECT_CONFIG_ERROR(
      compose(), "In 'config': Could not find 'extra/nope'. Available options in 'extra': one");
}

TEST_F(ComposeTest, GroupOverrideErrors) {
  write("extra/one.yaml", "v: 1\n");
  EXPECT_CONFIG_ERROR(
      compose({"dataset=nope"}),
      "In 'config': Could not find 'dataset/nope'. Available options in 'dataset': coco, shapes");
  EXPECT_CONFIG_ERROR(
      compose({"extra=one"}),
      "Could not override 'extra'. No match in the defaults list. "
      "To append to your default list use +extra=one");
  EXPECT_CONFIG_ERROR(
      compose({"++dataset=coco"}), "force-add of config groups is not supported: '++dataset=coco'");
  EXPECT_CONFIG_ERROR(compose({"dataset=5"}), "Config group override must be a string or a list. Got int");
  EXPECT_CONFIG_ERROR(compose({"datset=coco"}), "Could not override 'datset'.");
}

TEST_F(ComposeTest, DefaultsListErrors) {
  write("experiment/conflict.yaml", "# @package _global_\ndefaults:\n  - /dataset: coco\n");
  EXPECT_CONFIG_ERROR(
      compose({"experiment=conflict"}),
      "Multiple values for dataset. To override a value use 'override dataset: coco'");
  write(
      "experiment/late.yaml",
      "# @package _global_\ndefaults:\n  - override /dataset: coco\n  - /extra: one\n");
  EXPECT_CONFIG_ERROR(
      compose({"experiment=late"}),
      "In experiment/late: Override 'dataset : coco' is defined before 'extra: one'.");
  write("experiment/relative.yaml", "defaults:\n  - override dataset: coco\n");  // not /dataset, no _global_
  EXPECT_CONFIG_ERROR(
      compose({"experiment=relative"}), "In 'experiment/relative': Could not override 'experiment/dataset");

  write("config.yaml", "defaults:\n  - dataset: ???\n");
  EXPECT_CONFIG_ERROR(
      compose(), "You must specify 'dataset', e.g, dataset=<OPTION>. Available options: coco, shapes");
  EXPECT_EQ(compose({"dataset=coco"}).config.get<int>("dataset.size"), 224);
  write("config.yaml", "defaults:\n  - nogroup: x\n");
  EXPECT_CONFIG_ERROR(compose(), "In 'config': Could not find 'nogroup/x'. No config group 'nogroup' in ");
  write("config.yaml", "defaults:\n  - shared/nope\n");
  EXPECT_CONFIG_ERROR(compose(), "In 'config': Could not load 'shared/nope'.");
  write("config.yaml", "defaults: shapes\n");
  EXPECT_CONFIG_ERROR(compose(), "Invalid defaults list in 'config', defaults must be a list.");
}

TEST_F(ComposeTest, OverlayMergesAfterTheDefaultsAndBeforeTheOverrides) {
  // A saved run's config: it sets an existing value, lacks others, and has keys today's tree lacks.
  ComposeRequest request{dir_.path(), "config", {"train.lr=0.5"}};
  request.overlay =
      YAML::Load("train: {lr: 0.2, batch_size: 8, retired: 1}\ndataset: {size: 32}\nold: {a: 1}\n");
  const Composition c = saccade::compose(request);
  EXPECT_EQ(c.config.get<double>("train.lr"), 0.5);     // the override wins
  EXPECT_EQ(c.config.get<int>("train.batch_size"), 8);  // the overlay beats the defaults
  EXPECT_EQ(c.config.get<int>("dataset.size"), 32);
  EXPECT_EQ(c.config.get<std::string>("dataset.name"), "shapes");  // absent in the overlay: today's
  EXPECT_EQ(c.config.get<int>("old.a"), 1);                        // kept
  EXPECT_THAT(c.overlay_only_keys, ElementsAre("train.retired", "old"));
  EXPECT_TRUE(compose().overlay_only_keys.empty());
}

TEST_F(ComposeTest, MissingDirectoryAndPrimaryConfig) {
  EXPECT_CONFIG_ERROR(
      saccade::compose({dir_ / "nope", "config", {}}),
      "Primary config directory not found. Check that the config directory '");
  EXPECT_CONFIG_ERROR(
      saccade::compose({dir_.path(), "nope", {}}),
      "Cannot find primary config 'nope'. Check that it's in your config search path.");
  EXPECT_EQ(saccade::compose({dir_.path(), "config.yaml", {}}).config.get<int>("seed"), 1);
}

TEST_F(ComposeTest, MalformedYamlNamesFileAndLine) {
  write("dataset/bad.yaml", "name: bad\nsize: [1, 2\nother: 3\n");
  EXPECT_CONFIG_ERROR(
      compose({"dataset=bad"}), (dir_ / "dataset/bad.yaml").string() + ":3: end of sequence flow not found");
  write("dataset/dup.yaml", "a: 1\nb: 2\na: 3\n");
  EXPECT_CONFIG_ERROR(
      compose({"dataset=dup"}), (dir_ / "dataset/dup.yaml").string() + ":3: duplicate key 'a'");
  write("dataset/list.yaml", "- 1\n- 2\n");
  EXPECT_CONFIG_ERROR(
      compose({"dataset=list"}), (dir_ / "dataset/list.yaml").string() + ": a config file must hold");
}

TEST_F(ComposeTest, MergeKeysExpandAsPyYamlExpandsThem) {
  // Worked from PyYAML's flatten_mapping: the merged keys come first, the mapping's own values
  // win, and of a list of mappings the first wins. A quoted '<<' is an ordinary key.
  write(
      "dataset/merged.yaml",
      "base: &b {x: 1, y: 2}\nother: &o {y: 7, z: 8}\nderived:\n  <<: *b\n  y: 3\n"
      "listed: {<<: [*b, *o], w: 0}\nquoted: {'<<': 1}\n");
  const Composition c = compose({"dataset=merged", "dataset.derived.x=5"});
  EXPECT_EQ(
      Config(c.config.resolved("dataset")).to_yaml(),
      "base:\n  x: 1\n  'y': 2\nother:\n  'y': 7\n  z: 8\nderived:\n  x: 5\n  'y': 3\n"
      "listed:\n  'y': 2\n  z: 8\n  x: 1\n  w: 0\nquoted:\n  '<<': 1\n");
  write("dataset/bad_merge.yaml", "a: 1\nb:\n  <<: 5\n");
  EXPECT_CONFIG_ERROR(
      compose({"dataset=bad_merge"}),
      (dir_ / "dataset/bad_merge.yaml").string() +
          ":3: the merge key '<<' takes a mapping or a list of mappings, got int");
}

TEST_F(ComposeTest, GroupOptionsAreSortedYamlFiles) {
  write("dataset/readme.txt", "not an option\n");
  write("dataset/sub/inner.yaml", "x: 1\n");
  EXPECT_THAT(group_options(dir_.path(), "dataset"), ElementsAre("coco", "shapes"));
  EXPECT_TRUE(group_options(dir_.path(), "nope").empty());
}

}  // namespace
}  // namespace saccade
