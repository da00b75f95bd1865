// Run folders: the records written, the refusal to reuse a non-empty folder, temporaries.
#include "io/run_folder.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/log.h"
#include "io/temporaries.h"
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

// A run refused at set-up takes back what create_run_folder made: the folder, and the folders above
// it made for it while they hold nothing else.
TEST(UnstartedRunFolder, ARefusedRunTakesBackTheFoldersMadeForIt) {
  TempDir dir;
  const auto run = dir / "made/for/run";
  write_file(dir / "kept/sibling.txt", "someone else's");
  const auto beside_another = dir / "kept/run";
  for (const auto& folder : {run, beside_another}) {
    create_run_folder(folder, tiny_composition(), RunRecord{"train", {}, {}});
    write_file(folder / "metrics.csv", "kind,epoch\n");  // what set-up wrote before the refusal
    UnstartedRunFolder unstarted(folder);
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "made"));
  EXPECT_FALSE(std::filesystem::exists(beside_another));
  EXPECT_EQ(read_file(dir / "kept/sibling.txt"), "someone else's");
}

// A folder the user made (empty) is emptied of this attempt's files, not removed.
TEST(UnstartedRunFolder, AnEmptyFolderGivenStaysEmptied) {
  TempDir dir;
  std::filesystem::create_directories(dir / "mine");
  create_run_folder(dir / "mine", tiny_composition(), RunRecord{"train", {}, {}});
  { UnstartedRunFolder unstarted(dir / "mine"); }
  ASSERT_TRUE(std::filesystem::is_directory(dir / "mine"));
  EXPECT_TRUE(std::filesystem::is_empty(dir / "mine"));
}

// A started run's folder, and one create_run_folder did not fill here (a resumed run's), stay whole.
TEST(UnstartedRunFolder, AStartedRunOrAFolderNotMadeHereIsNeverTouched) {
  TempDir dir;
  create_run_folder(dir / "run", tiny_composition(), RunRecord{"train", {}, {}});
  {
    UnstartedRunFolder unstarted(dir / "run");
    unstarted.started();
  }
  { UnstartedRunFolder again(dir / "run"); }
  log::set_file("");
  EXPECT_TRUE(std::filesystem::exists(dir / "run/config.yaml"));
  EXPECT_TRUE(std::filesystem::exists(dir / "run/train.log"));
  write_file(dir / "resumed/checkpoints/last/state.json", "{}");
  { UnstartedRunFolder not_made_here(dir / "resumed"); }
  EXPECT_TRUE(std::filesystem::exists(dir / "resumed/checkpoints/last/state.json"));
}

// A run's YAML files (a checkpoint's config.yaml, run.yaml, multirun.yaml) name the file and the
// line when they are not YAML, nest past yaml-cpp's limit ("bad file" on its own) or are missing.
TEST(ReadYamlFile, ErrorsNameTheFile) {
  TempDir dir;
  write_file(dir / "cut.yaml", "seed: 1\nencoder: {name: [\n");
  const std::string cut = message_of<ConfigError>([&] { read_yaml_file(dir / "cut.yaml"); });
  EXPECT_EQ(cut.rfind((dir / "cut.yaml").string() + ":", 0), 0u) << cut;
  write_file(dir / "deep.yaml", "a: " + std::string(600, '[') + std::string(600, ']') + "\n");
  EXPECT_EQ(
      message_of<ConfigError>([&] {
        read_yaml_file(dir / "deep.yaml");
      }).rfind((dir / "deep.yaml").string() + ":1: the YAML nests too deep", 0),
      0u);
  EXPECT_EQ(
      message_of<std::runtime_error>([&] { read_yaml_file(dir / "absent.yaml"); }),
      "Could not read " + (dir / "absent.yaml").string());
  write_file(dir / "fine.yaml", "seed: 1\n");
  EXPECT_EQ(read_yaml_file(dir / "fine.yaml")["seed"].as<int>(), 1);
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

// FNV-1a 64: the empty file is the offset basis; "a" is worked by hand from it.
TEST(FileDigest, IsFnv1aOfTheBytes) {
  TempDir dir;
  write_file(dir / "empty", "");
  write_file(dir / "a", "a");
  write_file(dir / "b", "a");
  EXPECT_EQ(file_digest(dir / "empty"), "cbf29ce484222325");
  EXPECT_EQ(file_digest(dir / "a"), "af63dc4c8601ec8c");
  EXPECT_EQ(file_digest(dir / "a"), file_digest(dir / "b"));
  EXPECT_THROW(file_digest(dir / "missing"), std::runtime_error);
}

// What a killed writer left beside its target goes at the next write; a live process's stays.
TEST(Temporaries, TheNextWriterRemovesThoseOfDeadProcesses) {
  TempDir dir;
  const auto target = dir / "report.html";
  const std::string dead = "999999999";  // above any pid_max: no such process
  write_file(dir / ("report.html.tmp-" + dead), "torn");
  write_file(dir / ("report.html.tmp" + dead), "torn, older naming");
  std::filesystem::create_directories(dir / ("cache.tmp-" + dead + "/part"));
  const std::filesystem::path live = target.string() + ".tmp-" + std::to_string(::getppid());  // alive
  write_file(live, "being written");
  write_file(dir / "report.html.tmp-notapid", "not a temporary");
  write_file(dir / ("other.html.tmp-" + dead), "another target's");

  write_file_atomically(target, "whole");
  EXPECT_EQ(read_file(target), "whole");
  EXPECT_FALSE(std::filesystem::exists(dir / ("report.html.tmp-" + dead)));
  EXPECT_FALSE(std::filesystem::exists(dir / ("report.html.tmp" + dead)));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(dir / "report.html.tmp-notapid"));
  EXPECT_TRUE(std::filesystem::exists(dir / ("other.html.tmp-" + dead)));
  EXPECT_EQ(temporary_for(target), target.string() + ".tmp-" + std::to_string(::getpid()));
  EXPECT_EQ(remove_stale_temporaries(dir / "cache"), 1);  // a folder, removed whole
  EXPECT_FALSE(std::filesystem::exists(dir / ("cache.tmp-" + dead)));
}

// A resume clears a whole run of what its killed process was writing, whatever the target, and
// leaves finished files, live writers' temporaries and names that only look alike.
TEST(Temporaries, WithinAFolderEveryDeadProcesssTemporaryGoes) {
  TempDir dir;
  const std::string dead = "999999999";
  write_file(dir / ("report.html.tmp-" + dead), "torn");
  std::filesystem::create_directories(dir / ("checkpoints/last.tmp-" + dead + "/nested.tmp-" + dead));
  std::filesystem::create_directories(dir / "samples");
  write_file(dir / ("samples/0.png.tmp" + dead), "torn, older naming");
  write_file(dir / "samples/1.png", "finished");
  const auto live = dir / ("samples/2.png.tmp-" + std::to_string(::getppid()));
  write_file(live, "being written");
  write_file(dir / "samples/notes.tmp-x1", "not a temporary");
  write_file(dir / (".tmp-" + dead), "no target");

  EXPECT_EQ(remove_stale_temporaries_within(dir.path()), 2);
  EXPECT_FALSE(std::filesystem::exists(dir / ("report.html.tmp-" + dead)));
  EXPECT_FALSE(std::filesystem::exists(dir / ("checkpoints/last.tmp-" + dead)));
  EXPECT_TRUE(std::filesystem::exists(dir / "checkpoints"));
  // The older naming is removed only by a writer of its own target: a folder's names are not all ours.
  EXPECT_TRUE(std::filesystem::exists(dir / ("samples/0.png.tmp" + dead)));
  EXPECT_EQ(read_file(dir / "samples/1.png"), "finished");
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(dir / "samples/notes.tmp-x1"));
  EXPECT_TRUE(std::filesystem::exists(dir / (".tmp-" + dead)));
  EXPECT_EQ(remove_stale_temporaries_within(dir / "absent"), 0);
}

// A killed process that its parent has not reaped yet (a zombie) left its temporaries for good.
TEST(Temporaries, AZombieProcessCountsAsGone) {
  TempDir dir;
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  // Not waited for: a zombie until reaped below. Its state shows in /proc once it has exited.
  for (int i = 0;
       i < 1000 && read_file("/proc/" + std::to_string(child) + "/stat").find(") Z") == std::string::npos;
       ++i) {
    ::usleep(1000);
  }
  const auto stale = dir / ("cache.tmp-" + std::to_string(child));
  write_file(stale, "torn");
  EXPECT_EQ(remove_stale_temporaries(dir / "cache"), 1);
  EXPECT_FALSE(std::filesystem::exists(stale));
  ::waitpid(child, nullptr, 0);
}

// remove_tree against an enumerated tree: every entry under the folder goes, counted; a link goes
// itself, never what it points to; a missing path is nothing to do; a failure names the entry.
TEST(RemoveTree, RemovesWhatAFolderHoldsAndCountsIt) {
  TempDir dir;
  write_file(dir / "tree/a/b/deep.txt", "1");
  write_file(dir / "tree/top.txt", "2");
  std::filesystem::create_directories(dir / "tree/a/empty");
  write_file(dir / "outside/kept.txt", "3");
  std::filesystem::create_directory_symlink(dir / "outside", dir / "tree/a/folder_link");
  std::filesystem::create_symlink(dir / "outside/kept.txt", dir / "tree/file_link");
  // tree, a, b, deep.txt, top.txt, empty, folder_link, file_link
  EXPECT_EQ(remove_tree(dir / "tree"), 8u);
  EXPECT_FALSE(std::filesystem::exists(dir / "tree"));
  EXPECT_EQ(read_file(dir / "outside/kept.txt"), "3");

  std::error_code error;
  EXPECT_EQ(remove_tree(dir / "absent", error), 0u);
  EXPECT_FALSE(error);
  EXPECT_EQ(remove_tree(dir / "outside/kept.txt"), 1u);
  EXPECT_TRUE(std::filesystem::exists(dir / "outside"));

  write_file(dir / "plain", "a file, not a folder");
  EXPECT_EQ(remove_tree(dir / "plain/child", error), 0u);
  EXPECT_EQ(error, std::errc::not_a_directory);
  try {
    remove_tree(dir / "plain/child");
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& failure) {
    EXPECT_EQ(
        std::string(failure.what()),
        "Could not remove " + (dir / "plain/child").string() + ": Not a directory");
  }
}

}  // namespace
}  // namespace saccade::testing
