// The saccade binary as a user runs it: help, config printing, overrides, errors, run folders.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "test_util.h"

namespace saccade::testing {
namespace {

// The run folders below `root/experiments/<name>/`, sorted.
std::vector<std::filesystem::path> run_folders(const std::filesystem::path& root, const std::string& name) {
  std::vector<std::filesystem::path> folders;
  const auto parent = root / "experiments" / name;
  if (!std::filesystem::exists(parent)) return folders;
  for (const auto& entry : std::filesystem::directory_iterator(parent)) folders.push_back(entry.path());
  std::sort(folders.begin(), folders.end());
  return folders;
}

TEST(Cli, HelpListsCommandsAndGroupOptions) {
  const auto result = run_saccade({"--help"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const char* command :
       {"train", "eval", "score", "caption", "visualize", "extract", "prepare", "bench"}) {
    EXPECT_NE(result.out.find("\n  " + std::string(command) + " "), std::string::npos) << command;
  }
  EXPECT_NE(result.out.find("experiment"), std::string::npos);
  EXPECT_NE(result.out.find("shapes_soft"), std::string::npos);
}

// The shared libraries `binary` names (DT_NEEDED), in order, as readelf lists them.
std::vector<std::string> needed_libraries(const std::string& binary) {
  const auto result = run_program({"readelf", "--dynamic", binary});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> needed;
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t tag = line.find("(NEEDED)");
    const size_t name = line.find('[', tag);
    if (tag != std::string::npos && name != std::string::npos)
      needed.push_back(line.substr(name + 1, line.find(']', name) - name - 1));
  }
  return needed;
}

// PyTorch 2.11's pip LibTorch exports its own std::filesystem, which crashes when saccade calls
// it; the dynamic linker searches shared libraries in the order a binary names them, so
// libstdc++ must come before every LibTorch library. The link option (CMakeLists.txt) is the
// same for every executable; the saccade binary stands for them.
TEST(Cli, BinaryNamesLibstdcxxBeforeLibTorch) {
  const std::vector<std::string> needed = needed_libraries(SACCADE_BINARY);
  const auto position = [&](const std::string& prefix) {
    return std::find_if(
               needed.begin(), needed.end(),
               [&](const std::string& library) { return library.rfind(prefix, 0) == 0; }) -
           needed.begin();
  };
  const long count = static_cast<long>(needed.size());
  if (position("libstdc++.so") == count && position("libc++.so") < count) {
    GTEST_SKIP() << "saccade is built against libc++, which LibTorch's copy does not shadow";
  }
  if (position("libstdc++.so") == count) {
    GTEST_SKIP() << "libstdc++ is linked statically, so no order can put it first; saccade removes "
                    "folders with remove_tree, which calls none of std::filesystem (io/temporaries.h)";
  }
  ASSERT_LT(position("libstdc++.so"), count);
  ASSERT_LT(position("libtorch"), count);
  ASSERT_LT(position("libc10"), count);
  EXPECT_LT(position("libstdc++.so"), position("libtorch"));
  EXPECT_LT(position("libstdc++.so"), position("libc10"));
}

TEST(Cli, CommandHelpDescribesFlags) {
  const auto result = run_saccade({"caption", "--help"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("usage: saccade caption"), std::string::npos);
  EXPECT_NE(result.out.find("--beam K"), std::string::npos);
}

TEST(Cli, NoArgumentsIsUsageError) {
  const auto result = run_saccade({});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("usage: saccade <command>"), std::string::npos);
}

TEST(Cli, UnknownCommandIsUsageError) {
  const auto result = run_saccade({"trian"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("Unknown command 'trian'"), std::string::npos) << result.err;
}

TEST(Cli, BenchWithoutACaseListsTheCases) {
  const auto result = run_saccade({"bench"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  for (const std::string name : {"machine", "decoder", "scst", "loader", "beam", "encoder"})
    EXPECT_NE(result.out.find("\n  " + name + "  "), std::string::npos) << name << " in " << result.out;
}

// Products that go to netlib's reference BLAS (preloaded here, ahead of the OpenBLAS saccade
// links) are one warning naming its file; with OpenBLAS there is none, however loaded the machine.
TEST(Cli, AReferenceBlasIsOneWarningNamingItsFile) {
  const std::string reference = "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3";
  ASSERT_TRUE(std::filesystem::exists(reference)) << "scripts/setup.sh installs libblas3";
  const auto plain = run_saccade({"bench"});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.err, "");
  const auto slow = run_program({"env", "LD_PRELOAD=" + reference, SACCADE_BINARY, "bench"});
  EXPECT_EQ(slow.exit_code, 0) << slow.err;
  EXPECT_EQ(
      slow.err.rfind("warn: matrix products go to " + reference + ", which looks like the reference BLAS", 0),
      0)
      << slow.err;
  EXPECT_EQ(std::count(slow.err.begin(), slow.err.end(), '\n'), 1) << slow.err;
}

TEST(Cli, UnknownBenchCaseIsAOneLineUsageError) {
  const auto result = run_saccade({"bench", "beams"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(
      result.err.find("Unknown bench case 'beams'; cases: machine, decoder, scst, loader, beam, encoder"),
      std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find('\n'), result.err.size() - 1) << result.err;
  EXPECT_EQ(result.err.find("\\n"), std::string::npos) << result.err;
  const auto two = run_saccade({"bench", "beam", "decoder"});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("saccade bench takes one case, got 2"), std::string::npos) << two.err;
}

// --nproc is bounded by max(8, 4 x cores), as the help says: a count that wrapped around an int
// (4294967296 to 0 workers) or would fork past the process limit is one line, and nothing runs.
TEST(Cli, NprocBeyondTheLocalBoundIsOneLine) {
  const auto help = run_saccade({"train", "--help"});
  EXPECT_NE(help.out.find("at most max(8, 4 x cores)"), std::string::npos) << help.out;
  const int bound = std::max(8, 4 * static_cast<int>(std::thread::hardware_concurrency()));
  TempDir work;
  // The wrapped counts first: unbounded they train once, where one past the bound would fork.
  for (const std::string& nproc :
       std::vector<std::string>{"4294967296", "2147483648", std::to_string(bound + 1)}) {
    const auto run = work / ("nproc_" + nproc);
    const auto result = run_saccade(
        {"train", "-cp", configs().string(), "experiment=smoke", "--nproc", nproc, "run.dir=" + run.string()},
        work.path());
    ASSERT_EQ(result.exit_code, 2) << nproc << ": " << result.err;
    EXPECT_EQ(
        result.err, "saccade: error: --nproc " + nproc + " is more than the " + std::to_string(bound) +
                        " local workers this machine allows (4 per core, at least 8)\n");
    EXPECT_FALSE(std::filesystem::exists(run)) << nproc;
  }
}

TEST(Cli, UnknownFlagIsUsageError) {
  const auto result = run_saccade({"train", "--bogus"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("Unknown flag '--bogus'"), std::string::npos) << result.err;
}

TEST(Cli, CfgResolvePrintsResolvedConfigWithOverrides) {
  const auto result = run_saccade({"train", "--cfg", "job", "--resolve", "seed=7", "run.name=probe"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const YAML::Node printed = YAML::Load(result.out);
  EXPECT_EQ(printed["seed"].as<int>(), 7);
  EXPECT_EQ(printed["dataset"]["name"].as<std::string>(), "shapes");
  // run.dir interpolates run.name and the start time: resolved, it names the new run.
  const auto dir = printed["run"]["dir"].as<std::string>();
  EXPECT_EQ(dir.rfind("experiments/probe/", 0), 0u) << dir;
  EXPECT_EQ(dir.find("${"), std::string::npos) << dir;
}

// As Hydra's `--cfg job`: interpolations printed as written, unless --resolve, where one that
// reaches a `???` value prints `???` (OmegaConf.resolve) instead of failing.
TEST(Cli, CfgPrintsInterpolationsAsWrittenAndMissingOnesAsMissing) {
  TempDir tree;
  write_file(tree / "conf/config.yaml", "a: ???\nb: ${a}\nc: x_${b}\nd: ${e}\ne: 3\n");
  const auto plain = run_saccade({"train", "--cfg", "job", "-cp", (tree / "conf").string()}, tree.path());
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const YAML::Node written = YAML::Load(plain.out);
  EXPECT_EQ(written["b"].as<std::string>(), "${a}");
  EXPECT_EQ(written["d"].as<std::string>(), "${e}");

  const auto resolved =
      run_saccade({"train", "--cfg", "job", "--resolve", "-cp", (tree / "conf").string()}, tree.path());
  ASSERT_EQ(resolved.exit_code, 0) << resolved.err;
  const YAML::Node values = YAML::Load(resolved.out);
  for (const char* key : {"a", "b", "c"}) EXPECT_EQ(values[key].as<std::string>(), "???") << key;
  EXPECT_EQ(values["d"].as<int>(), 3);
}

TEST(Cli, CfgWorksOnAUserConfigTree) {
  TempDir tree;
  write_file(tree / "conf/main.yaml", "defaults:\n  - db: mysql\n  - _self_\nport: 80\n");
  write_file(tree / "conf/db/mysql.yaml", "driver: mysql\nuser: root\n");
  write_file(tree / "conf/db/postgres.yaml", "driver: postgres\nuser: admin\n");
  const auto result = run_saccade(
      {"train", "--cfg", "-cp", (tree / "conf").string(), "-cn", "main", "db=postgres"}, tree.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const YAML::Node printed = YAML::Load(result.out);
  EXPECT_EQ(printed["db"]["driver"].as<std::string>(), "postgres");
  EXPECT_EQ(printed["port"].as<int>(), 80);
}

TEST(Cli, InfoDefaultsListsTheFinalDefaults) {
  const auto result = run_saccade({"train", "--info", "defaults", "experiment=smoke"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto dataset = result.out.find("dataset/shapes");
  const auto experiment = result.out.find("experiment/smoke");
  ASSERT_NE(dataset, std::string::npos) << result.out;
  ASSERT_NE(experiment, std::string::npos) << result.out;
  EXPECT_LT(dataset, experiment);
  // Each _self_ row names the config whose own content it places.
  EXPECT_NE(result.out.find("| config (_self_) | package: <root> | parent: - |"), std::string::npos)
      << result.out;
  const auto nested = run_saccade({"train", "--info", "defaults", "experiment=shapes_hard"});
  ASSERT_EQ(nested.exit_code, 0) << nested.err;
  EXPECT_NE(
      nested.out.find("| decoder/soft | package: decoder | parent: decoder/hard |\n"
                      "| decoder/hard (_self_) | package: decoder | parent: config |\n"),
      std::string::npos)
      << nested.out;
}

// A printout is of one composition: not of a sweep (as Hydra refuses it), nor of none.
TEST(Cli, SweepsAreNotPrintedAndAnEmptySweepIsRefused) {
  for (const char* print : {"--cfg", "--info"}) {
    const auto result = run_saccade({"train", "-m", print, "seed=1,2"});
    EXPECT_EQ(result.exit_code, 2) << print << result.out;
    EXPECT_EQ(result.err, "saccade: error: Only one of -m, --cfg and --info can be given\n") << result.err;
  }
  const auto empty = run_saccade({"train", "-m", "seed=range(0,0)"});
  EXPECT_EQ(empty.exit_code, 2) << empty.out;
  EXPECT_EQ(empty.err, "saccade: error: The sweep 'seed=range(0,0)' has no values: no job would run\n")
      << empty.err;
}

TEST(Cli, OverrideOfUnknownKeyNamesNearestKey) {
  const auto result = run_saccade({"train", "--cfg", "runtime.thread=1"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("Could not override 'runtime.thread'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("runtime.threads"), std::string::npos) << result.err;
}

TEST(Cli, UnknownGroupOptionListsAvailableOptions) {
  const auto result = run_saccade({"train", "--cfg", "dataset=nope"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("nope"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("shapes"), std::string::npos) << result.err;
}

TEST(Cli, TypeMismatchIsConfigError) {
  TempDir work;
  const auto result = run_saccade({"train", "-cp", configs().string(), "runtime.threads=abc"}, work.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("runtime.threads"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("abc"), std::string::npos) << result.err;
}

TEST(Cli, MalformedYamlNamesFileAndLine) {
  TempDir tree;
  write_file(tree / "conf/config.yaml", "a: 1\nb: [1, 2\nc: 3\n");
  const auto result = run_saccade({"train", "--cfg", "-cp", (tree / "conf").string()}, tree.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("config.yaml:"), std::string::npos) << result.err;
}

// Nine levels of aliases repeating ten aliases would expand to a billion values: refused at once.
TEST(Cli, AliasBombInAConfigIsRefused) {
  TempDir tree;
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string previous = "*a" + std::to_string(level - 1);
    text += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) text += (i ? ", " : "") + previous;
    text += "]\n";
  }
  write_file(tree / "conf/config.yaml", text);
  const auto result = run_saccade({"train", "--cfg", "-cp", (tree / "conf").string()}, tree.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("config.yaml: the YAML expands to more than 100000 values"), std::string::npos)
      << result.err;
}

// An alias inside its own anchor makes the tree a cycle: refused, not walked until the stack ends.
TEST(Cli, AnAliasInsideItsOwnAnchorIsRefused) {
  TempDir tree;
  write_file(tree / "conf/config.yaml", "base: &b {x: *b, y: 1}\n");
  const auto result = run_saccade({"train", "--cfg", "job", "-cp", (tree / "conf").string()}, tree.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("config.yaml: the YAML nests deeper than 512 levels"), std::string::npos)
      << result.err;
}

// An integer its setting's type cannot hold names the key and the bound, before any file is written.
TEST(Cli, AnIntegerBeyondItsSettingsRangeNamesTheBound) {
  TempDir work;
  for (const auto& [override_text, message] :
       {std::pair{
            "dist.timeout_s=10000000000", "dist.timeout_s: 10000000000 is too large (at most 2147483647)"},
        std::pair{
            "runtime.threads=-10000000000",
            "runtime.threads: -10000000000 is too small (at least -2147483648)"}}) {
    const auto result =
        run_saccade({"train", "-cp", configs().string(), "experiment=smoke", override_text}, work.path());
    EXPECT_EQ(result.exit_code, 2) << result.err;
    EXPECT_EQ(result.err, "saccade: error: " + std::string(message) + "\n");
    EXPECT_FALSE(std::filesystem::exists(work / "experiments")) << override_text;
  }
}

// `saccade report` of a sweep whose multirun.yaml was cut short names the file and the key.
TEST(Cli, ReportOfACutSweepRecordNamesTheFileAndKey) {
  TempDir work;
  const auto record = work / "sweep/multirun.yaml";
  write_file(record, "command: train\nargv: [saccade, train, -m, seed=0,1]\njobs:\n  - [seed=0]\n  -\n");
  const auto result = run_saccade({"report", "--run", (work / "sweep").string()}, work.path());
  EXPECT_EQ(result.exit_code, 2) << result.err;
  // The error is the last line: on a loaded machine a warning that matrix products run slowly
  // may come first.
  const std::string error = "saccade: error: " + record.string() + ": jobs[1]: expected a list, got null\n";
  ASSERT_GE(result.err.size(), error.size()) << result.err;
  EXPECT_EQ(result.err.substr(result.err.size() - error.size()), error);
}

TEST(Cli, MissingConfigDirIsConfigError) {
  TempDir work;
  const auto result = run_saccade({"train", "--cfg", "-cp", (work / "absent").string()}, work.path());
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("absent"), std::string::npos) << result.err;
}

TEST(Cli, SweepWithoutMultirunIsAmbiguous) {
  const auto result = run_saccade({"train", "--cfg", "seed=1,2"});
  EXPECT_EQ(result.exit_code, 2);
  EXPECT_NE(result.err.find("Ambiguous value for argument 'seed=1,2'"), std::string::npos) << result.err;
}

TEST(Cli, TrainCreatesRunFolderWithRecords) {
  TempDir work;
  const auto result = run_saccade(
      {"train", "-cp", configs().string(), "experiment=smoke", "seed=3", "train.epochs=1"}, work.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto folders = run_folders(work.path(), "smoke");
  ASSERT_EQ(folders.size(), 1u);
  const auto& run = folders.front();

  const YAML::Node config = YAML::LoadFile((run / "config.yaml").string());
  EXPECT_EQ(config["seed"].as<int>(), 3);
  EXPECT_EQ(work.path() / config["run"]["dir"].as<std::string>(), run);

  const YAML::Node overrides = YAML::LoadFile((run / "overrides.yaml").string());
  ASSERT_EQ(overrides.size(), 3u);
  EXPECT_EQ(overrides[0].as<std::string>(), "experiment=smoke");
  EXPECT_EQ(overrides[1].as<std::string>(), "seed=3");

  const YAML::Node record = YAML::LoadFile((run / "run.yaml").string());
  EXPECT_EQ(record["command"].as<std::string>(), "train");
  EXPECT_EQ(record["choices"]["experiment"].as<std::string>(), "smoke");
  EXPECT_EQ(record["choices"]["dataset"].as<std::string>(), "shapes");
  EXPECT_FALSE(record["host"].as<std::string>().empty());
  EXPECT_FALSE(record["commit"].as<std::string>().empty());
  EXPECT_FALSE(record["version"].as<std::string>().empty());
  EXPECT_FALSE(read_file(run / "train.log").empty());
}

TEST(Cli, MultirunNumbersJobsWithFirstKeySlowest) {
  TempDir work;
  const auto result = run_saccade(
      {"train", "-m", "-cp", configs().string(), "experiment=smoke", "train.epochs=1", "seed=1,2",
       "runtime.threads=1,2"},
      work.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto sweeps = run_folders(work.path(), "smoke");
  ASSERT_EQ(sweeps.size(), 1u);
  const auto& sweep = sweeps.front();
  const YAML::Node multirun = YAML::LoadFile((sweep / "multirun.yaml").string());
  ASSERT_EQ(multirun["jobs"].size(), 4u);

  const char* expected[4][2] = {
      {"seed=1", "runtime.threads=1"},
      {"seed=1", "runtime.threads=2"},
      {"seed=2", "runtime.threads=1"},
      {"seed=2", "runtime.threads=2"}};
  for (int job = 0; job < 4; ++job) {
    const auto folder = sweep / std::to_string(job);
    ASSERT_TRUE(std::filesystem::exists(folder / "config.yaml")) << folder;
    const YAML::Node overrides = YAML::LoadFile((folder / "overrides.yaml").string());
    ASSERT_EQ(overrides.size(), 4u);
    EXPECT_EQ(overrides[0].as<std::string>(), "experiment=smoke");
    EXPECT_EQ(overrides[2].as<std::string>(), expected[job][0]) << "job " << job;
    EXPECT_EQ(overrides[3].as<std::string>(), expected[job][1]) << "job " << job;
    const YAML::Node config = YAML::LoadFile((folder / "config.yaml").string());
    EXPECT_EQ(config["seed"].as<std::string>(), std::string(expected[job][0]).substr(5));
    EXPECT_TRUE(std::filesystem::exists(folder / "report.html")) << folder;
  }
  // The sweep page lists every job, linked to its own page, finished.
  const std::string report = read_file(sweep / "report.html");
  for (int job = 0; job < 4; ++job) {
    const std::string link =
        "<a href=\"" + std::to_string(job) + "/report.html\">#" + std::to_string(job) + "</a>";
    EXPECT_NE(report.find(link), std::string::npos) << link;
  }
  EXPECT_NE(report.find("seed=2 runtime.threads=1</td><td>finished</td>"), std::string::npos) << report;
  EXPECT_NE(report.find("<tr class=\"best\">"), std::string::npos);
  // The comparison: jobs alike but for their seed are one run, printed and written.
  EXPECT_NE(result.out.find("Comparison ("), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("| runtime.threads=1 | 1, 2 |"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("| runtime.threads=2 | 1, 2 |"), std::string::npos) << result.out;
  const std::string csv = read_file(sweep / "comparison.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5) << csv;  // the header and four jobs
  // Each job's test scores carry its model's parameters, as many as training reported.
  const std::string scores = read_file(sweep / "0/results/test_scores.json");
  const size_t key = scores.find("\"parameters\": ");
  ASSERT_NE(key, std::string::npos) << scores;
  const std::string parameters = scores.substr(key + 14, scores.find_first_of(",\n}", key) - key - 14);
  EXPECT_NE(read_file(sweep / "0/train.log").find("; " + parameters + " parameters;"), std::string::npos)
      << parameters;
}

}  // namespace
}  // namespace saccade::testing
