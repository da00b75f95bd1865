// Data-parallel training as users start it: `saccade train --nproc 2` and the real torchrun
// launcher, on loopback. Two ranks of the smoke experiment (dropout off, frozen encoder) keep
// identical parameters and train as one process with the same global batch does; only rank 0
// writes the run's files; bad job variables and absent peers end in one line.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <regex>
#include <stdexcept>
#include <thread>

#include "io/metrics_csv.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

std::vector<std::string> smoke(const std::filesystem::path& run_dir, std::vector<std::string> more = {}) {
  std::vector<std::string> args = {
      "train",
      "-cp",
      (source_dir() / "configs").string(),
      "experiment=smoke",
      "decoder.dropout=0",
      "encoder.trainable_blocks=0",
      "run.dir=" + run_dir.string()};
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// "epoch N parameters <digest>" lines of a log, in order.
std::vector<std::string> parameter_digests(const std::filesystem::path& log) {
  std::vector<std::string> digests;
  const std::string text = read_file(log);
  const std::regex line("epoch \\d+ parameters [0-9a-f]{16}");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), line); it != std::sregex_iterator(); ++it)
    digests.push_back(it->str());
  return digests;
}

// Every number of two metrics.csv files agrees within `relative` (images_per_s aside).
void expect_same_metrics(const std::filesystem::path& a, const std::filesystem::path& b, double relative) {
  const MetricsTable one = read_metrics_csv(a), two = read_metrics_csv(b);
  ASSERT_EQ(one.rows.size(), two.rows.size());
  for (size_t i = 0; i < one.rows.size(); ++i) {
    for (const auto& column : one.columns) {
      if (column == "images_per_s") continue;
      const auto x = MetricsTable::number(one.rows[i], column), y = MetricsTable::number(two.rows[i], column);
      ASSERT_EQ(x.has_value(), y.has_value()) << "row " << i << " " << column;
      if (!x) continue;
      EXPECT_LE(std::abs(*x - *y), relative * std::max(1e-6, std::abs(*x))) << "row " << i << " " << column;
    }
  }
}

TEST(Distributed, TwoRanksTrainAsOneProcessWithTheSameGlobalBatch) {
  TempDir work;
  const auto two = work / "two";
  const auto parallel = run_saccade(smoke(two, {"--nproc", "2"}), work.path());
  ASSERT_EQ(parallel.exit_code, 0) << parallel.err;
  const auto one = work / "one";
  ASSERT_EQ(run_saccade(smoke(one), work.path()).exit_code, 0);

  // Both ranks hold the same parameters, bit for bit, after every epoch.
  const auto rank0 = parameter_digests(two / "train.log"), rank1 = parameter_digests(two / "logs/rank1.log");
  ASSERT_EQ(rank0.size(), 2u);
  EXPECT_EQ(rank0, rank1);
  expect_same_metrics(one / "metrics.csv", two / "metrics.csv", 1e-5);
  // Only rank 0 writes the run's files; rank 1 keeps its own log.
  EXPECT_TRUE(std::filesystem::exists(two / "checkpoints/best/model.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(two / "report.html"));
  EXPECT_EQ(parallel.out.find("Run folder:"), parallel.out.rfind("Run folder:"))
      << parallel.out;  // one summary
  for (const auto& entry : std::filesystem::directory_iterator(two / "logs"))
    EXPECT_EQ(entry.path().filename(), "rank1.log");
  // Validation and the test split were shared out and gathered: a single process's captions.
  EXPECT_EQ(read_file(two / "results/test.json"), read_file(one / "results/test.json"));
}

TEST(Distributed, RanksAgreeWithBatchNormTrainingAndDropoutOn) {
  // small_cnn trains from scratch here: its BatchNorm statistics follow each rank's part of the
  // batches, and rank 0's are shared before validating, so parameters and buffers agree.
  TempDir work;
  const auto run = work / "trainable";
  const auto result = run_saccade(
      {"train", "-cp", (source_dir() / "configs").string(), "experiment=smoke", "--nproc", "2",
       "run.dir=" + run.string()},
      work.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto digests = parameter_digests(run / "train.log");
  ASSERT_EQ(digests.size(), 2u);
  EXPECT_EQ(digests, parameter_digests(run / "logs/rank1.log"));
}

// Self-critical training on two ranks: each samples its images' captions, the loss weighs each
// rank by its share of the images, and the parameters stay identical.
TEST(Distributed, SelfCriticalRanksStayInStep) {
  TempDir work;
  const auto start = work / "start";
  ASSERT_EQ(run_saccade(smoke(start, {"train.epochs=1"}), work.path()).exit_code, 0);
  const auto run = work / "scst";
  const auto result = run_saccade(
      smoke(run, {"--nproc", "2", "train.objective=scst", "train.init_from=" + start.string()}), work.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const auto digests = parameter_digests(run / "train.log");
  ASSERT_EQ(digests.size(), 2u);
  EXPECT_EQ(digests, parameter_digests(run / "logs/rank1.log"));
  const MetricsTable metrics = read_metrics_csv(run / "metrics.csv");
  int rewards = 0;
  for (const auto& row : metrics.rows) rewards += MetricsTable::number(row, "scst_reward").has_value();
  EXPECT_GE(rewards, 2);
}

// Quotes `text` for /bin/sh.
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The shell command of rank `rank` of a job on loopback started by hand, as a SLURM script does.
std::string rank_command(int rank, int world_size, int port, const std::vector<std::string>& args) {
  std::string command = "env RANK=" + std::to_string(rank) + " LOCAL_RANK=" + std::to_string(rank) +
                        " WORLD_SIZE=" + std::to_string(world_size) +
                        " MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port) + " " +
                        quoted(SACCADE_BINARY);
  for (const auto& arg : args) command += " " + quoted(arg);
  return command;
}

// Each rank's exit code and stderr, the ranks started at once by hand on loopback, each with its
// WORLD_SIZE and arguments; a rank that hangs is killed after 60 s.
std::vector<CommandResult> run_ranks_by_hand(
    const std::vector<std::pair<int, std::vector<std::string>>>& world_size_and_args, const TempDir& work) {
  const int port = free_port();
  std::string script;
  for (size_t r = 0; r < world_size_and_args.size(); ++r) {
    const auto& [world_size, args] = world_size_and_args[r];
    script += "timeout -s KILL 60 " + rank_command(static_cast<int>(r), world_size, port, args) +
              " >/dev/null 2>rank" + std::to_string(r) + ".err & pid" + std::to_string(r) + "=$!\n";
  }
  for (size_t r = 0; r < world_size_and_args.size(); ++r)
    script += "wait $pid" + std::to_string(r) + "; echo $? >rank" + std::to_string(r) + ".code\n";
  run_program({"/bin/sh", "-c", script}, work.path());
  std::vector<CommandResult> results(world_size_and_args.size());
  for (size_t r = 0; r < results.size(); ++r) {
    results[r].exit_code = std::stoi(read_file(work / ("rank" + std::to_string(r) + ".code")));
    results[r].err = read_file(work / ("rank" + std::to_string(r) + ".err"));
  }
  return results;
}

// A stand-in for rank 0 on loopback that is no c10d store: it accepts every connection and sends
// `reply` on it (nothing, as a stopped rank 0 or another program's quiet port), keeping it open.
class FakeRankZero {
 public:
  explicit FakeRankZero(std::string reply) : reply_(std::move(reply)) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof(address);
    if (listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        listen(listener_, 16) != 0 ||
        getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &size) != 0)
      throw std::runtime_error("could not listen on loopback");
    port_ = ntohs(address.sin_port);
    server_ = std::thread([this] { serve(); });
  }
  ~FakeRankZero() {
    shutdown(listener_, SHUT_RDWR);  // ends serve()'s accept
    server_.join();
    close(listener_);
  }
  FakeRankZero(const FakeRankZero&) = delete;
  FakeRankZero& operator=(const FakeRankZero&) = delete;
  int port() const { return port_; }

 private:
  void serve() {
    std::vector<int> connections;
    for (int connection; (connection = accept(listener_, nullptr, nullptr)) >= 0;) {
      if (!reply_.empty()) send(connection, reply_.data(), reply_.size(), MSG_NOSIGNAL);
      connections.push_back(connection);
    }
    for (const int connection : connections) close(connection);
  }

  std::string reply_;
  int listener_ = -1;
  int port_ = 0;
  std::thread server_;
};

// Rank 1 of two started by hand against rank 0 at `master_addr`:`port`, with dist.timeout_s=3
// (killed after 40 s should it hang): its outcome, and the seconds it took.
std::pair<CommandResult, double> rank_one_against(
    const std::string& master_addr, int port, const TempDir& work) {
  std::vector<std::string> argv = {"timeout", "-s", "KILL", "40", SACCADE_BINARY};
  for (const auto& arg : smoke(work / "run", {"dist.timeout_s=3"})) argv.push_back(arg);
  const auto started = std::chrono::steady_clock::now();
  CommandResult result = run_program(
      argv, work.path(),
      {{"WORLD_SIZE", "2"},
       {"RANK", "1"},
       {"MASTER_ADDR", master_addr},
       {"MASTER_PORT", std::to_string(port)}});
  return {result, std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()};
}

// The installed PyTorch's torchrun through scripts/torchrun.py, which mends what fails in
// Debian's builds before any worker starts: 1.13's launcher under Python 3.11, and 2.6's store,
// which asks for the libuv server Debian's build lacks. Empty without python3-torch.
std::vector<std::string> torchrun() {
  if (run_program({"/usr/bin/python3", "-c", "import torch.distributed.run"}).exit_code != 0) return {};
  return {"/usr/bin/python3", (source_dir() / "scripts/torchrun.py").string()};
}

std::vector<std::string> under_torchrun(
    const std::vector<std::string>& launcher, std::vector<std::string> args) {
  std::vector<std::string> argv = launcher;
  argv.insert(
      argv.end(),
      {"--nproc_per_node=2", "--master_port=" + std::to_string(free_port()), "--no_python", SACCADE_BINARY});
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

TEST(Distributed, UnderTheRealTorchrunRanksTrainAsOneProcess) {
  const auto launcher = torchrun();
  if (launcher.empty()) GTEST_SKIP() << "python3-torch (torchrun) is not installed";
  TempDir work;
  const auto run = work / "torchrun", one = work / "one";
  const auto result = run_program(under_torchrun(launcher, smoke(run)), work.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_EQ(run_saccade(smoke(one), work.path()).exit_code, 0);
  const auto rank0 = parameter_digests(run / "train.log");
  ASSERT_EQ(rank0.size(), 2u);
  EXPECT_EQ(rank0, parameter_digests(run / "logs/rank1.log"));
  expect_same_metrics(one / "metrics.csv", run / "metrics.csv", 1e-5);
  EXPECT_EQ(read_file(run / "results/test.json"), read_file(one / "results/test.json"));
}

TEST(Distributed, UnderTheRealTorchrunAKilledRankEndsTheJobAndTheLastCheckpointStays) {
  const auto launcher = torchrun();
  if (launcher.empty()) GTEST_SKIP() << "python3-torch (torchrun) is not installed";
  TempDir work;
  const auto run = work / "killed";
  std::string command;
  for (const auto& arg : under_torchrun(launcher, smoke(run, {"train.epochs=1000", "dist.timeout_s=20"})))
    command += " " + quoted(arg);
  // The worker whose environment says RANK=1 is killed once rank 0 has finished two epochs;
  // torchrun then stops the other worker and fails.
  const std::string script =
      command +
      " >/dev/null 2>&1 & launcher=$!\n"
      "for i in $(seq 600); do grep -q 'epoch 2 parameters' " +
      quoted((run / "train.log").string()) +
      " 2>/dev/null && break; sleep 0.1; done\n"
      "for p in /proc/[0-9]*; do tr '\\0' '\\n' <$p/cmdline 2>/dev/null | grep -qxF " +
      quoted("run.dir=" + run.string()) +
      " && tr '\\0' '\\n' <$p/environ 2>/dev/null | grep -qx RANK=1 && kill -9 ${p#/proc/}; done\n"
      "wait $launcher; echo torchrun=$?\n";
  const auto started = std::chrono::steady_clock::now();
  const auto result = run_program({"/bin/sh", "-c", script}, work.path());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(120));
  EXPECT_NE(result.out.find("torchrun="), std::string::npos) << result.out;
  EXPECT_EQ(result.out.find("torchrun=0"), std::string::npos) << result.out;
  // The last good checkpoint is whole: saccade eval reads the best one.
  const auto evaluated = run_saccade({"eval", "--run", run.string(), "decode.beam_size=1"}, work.path());
  EXPECT_EQ(evaluated.exit_code, 0) << evaluated.err;
}

TEST(Distributed, BadJobVariablesAndAbsentPeersAreOneLine) {
  TempDir work;
  const auto zero = run_saccade(smoke(work / "a", {"--nproc", "0"}), work.path());
  EXPECT_EQ(zero.exit_code, 2);
  EXPECT_NE(zero.err.find("--nproc must be a positive integer, got '0'"), std::string::npos) << zero.err;
  EXPECT_FALSE(std::filesystem::exists(work / "a"));

  const auto rank = run_saccade(smoke(work / "b"), work.path(), {{"WORLD_SIZE", "2"}, {"RANK", "2"}});
  EXPECT_EQ(rank.exit_code, 2);
  EXPECT_NE(rank.err.find("RANK must be in [0, WORLD_SIZE) = [0, 2), got 2"), std::string::npos) << rank.err;
  EXPECT_FALSE(std::filesystem::exists(work / "b"));

  // Rank 0 alone: its peer never joins, so it stops after dist.timeout_s.
  const auto started = std::chrono::steady_clock::now();
  const auto alone = run_saccade(
      smoke(work / "c", {"dist.timeout_s=2"}), work.path(),
      {{"WORLD_SIZE", "2"},
       {"RANK", "0"},
       {"MASTER_ADDR", "127.0.0.1"},
       {"MASTER_PORT", std::to_string(free_port())}});
  EXPECT_EQ(alone.exit_code, 1);
  EXPECT_NE(alone.err.find("saccade: error: rank 0 could not"), std::string::npos) << alone.err;
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
}

// c10d alone waited past the timeout (26 s, > 100 s with dist.timeout_s 5-10) on a port that
// accepts and never answers, aborted on one that answers junk, and printed 7 lines of warnings
// before saccade's for an address that does not resolve. Now each ends rank 1 in one line within
// dist.timeout_s, plus a second for the watchdog.
TEST(Distributed, ARankZeroThatIsNoStoreEndsTheRankWithinTheTimeoutInOneLine) {
  TempDir work;
  const FakeRankZero silent(""), junk(std::string(64, '\xff'));
  const std::vector<std::pair<std::string, int>> rank_zeros = {
      {"127.0.0.1", silent.port()}, {"127.0.0.1", junk.port()}, {"no-such-host.invalid", free_port()}};
  for (const auto& [address, port] : rank_zeros) {
    const auto [result, seconds] = rank_one_against(address, port, work);
    const std::string where = address + ":" + std::to_string(port);
    EXPECT_EQ(result.exit_code, 1) << where << ": " << result.err;
    EXPECT_EQ(
        result.err.rfind(
            "saccade: error: rank 1 could not reach the rendezvous at " + where + " (WORLD_SIZE=2): ", 0),
        0u)
        << result.err;
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_LT(seconds, 15.0) << where;
  }
  EXPECT_FALSE(std::filesystem::exists(work / "run"));
}

// Ranks started with different configs or WORLD_SIZEs stop at once, every one with the same line
// naming the difference: Gloo aborted on another model's parameters, and ranks with another
// learning rate trained apart silently.
TEST(Distributed, RanksStartedDifferentlyAreRefusedInOneLineNamingTheDifference) {
  TempDir work;
  const auto config = smoke(work / "run", {"dist.timeout_s=5"});
  auto other_config = config;
  other_config.push_back("decoder.hidden_dim=48");
  for (const CommandResult& rank : run_ranks_by_hand({{2, config}, {2, other_config}}, work)) {
    EXPECT_EQ(rank.exit_code, 2) << rank.err;
    EXPECT_EQ(
        rank.err,
        "saccade: error: rank 1's job differs from rank 0's at decoder.hidden_dim (48 on rank 1, 32 on "
        "rank 0): start every rank with the same command line, config and dataset files\n");
  }
  const auto ranks = run_ranks_by_hand({{2, config}, {3, config}}, work);
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::string& err = ranks[r].err;
    EXPECT_EQ(ranks[r].exit_code, 2) << err;
    EXPECT_EQ(
        err.rfind("saccade: error: rank " + std::to_string(r) + " could not form the job at 127.0.0.1:", 0),
        0u)
        << err;
    EXPECT_NE(
        err.find(": rank 1 was started with WORLD_SIZE=3 and rank 0 with WORLD_SIZE=2\n"), std::string::npos)
        << err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  EXPECT_FALSE(std::filesystem::exists(work / "run"));
}

TEST(Distributed, ResumesWithAnotherWorldSize) {
  TempDir work;
  const auto first = work / "first", second = work / "second", third = work / "third";
  ASSERT_EQ(run_saccade(smoke(first, {"--nproc", "2", "train.epochs=1"}), work.path()).exit_code, 0);
  // Two ranks' epoch 1, continued by one process, then one process's epochs by two ranks.
  const auto alone =
      run_saccade(smoke(second, {"train.epochs=2", "train.resume=" + first.string()}), work.path());
  ASSERT_EQ(alone.exit_code, 0) << alone.err;
  EXPECT_NE(alone.err.find("after epoch 1"), std::string::npos) << alone.err;
  const auto both = run_saccade(
      smoke(third, {"--nproc", "2", "train.epochs=3", "train.resume=" + second.string()}), work.path());
  ASSERT_EQ(both.exit_code, 0) << both.err;
  const auto digests = parameter_digests(third / "train.log");
  ASSERT_EQ(digests.size(), 1u);
  EXPECT_EQ(digests.front().rfind("epoch 3 parameters", 0), 0u);
  EXPECT_EQ(digests, parameter_digests(third / "logs/rank1.log"));
}

TEST(Distributed, TheDecoderBenchRunsOnTwoRanksBesideOneProcess) {
  TempDir work;
  const auto result = run_saccade({"bench", "decoder", "--nproc", "2"}, work.path());
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("one process, "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("2 ranks of 16 images"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("+ gradient sum "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("against one process on the same cores: "), std::string::npos) << result.out;
  const auto other = run_saccade({"bench", "beam", "--nproc", "2"}, work.path());
  EXPECT_EQ(other.exit_code, 2);
  // Refused before any worker starts: one line.
  EXPECT_EQ(other.err, "saccade: error: Only `saccade bench decoder` runs on several processes (--nproc)\n");
}

TEST(Distributed, AKilledRankEndsTheOthersAndTheLastCheckpointStays) {
  TempDir work;
  const auto run = work / "killed";
  const int port = free_port();
  const auto rank = [&](int r) {
    return rank_command(r, 2, port, smoke(run, {"train.epochs=1000", "dist.timeout_s=20"}));
  };
  // Both ranks in the background; rank 1 is killed once rank 0 has finished two epochs.
  const std::string script = rank(0) + " 2>rank0.err & zero=$!\n" + rank(1) +
                             " 2>/dev/null & one=$!\n"
                             "for i in $(seq 600); do grep -q 'epoch 2 parameters' " +
                             quoted((run / "train.log").string()) +
                             " 2>/dev/null && break; sleep 0.1; done\n"
                             "kill -9 $one\n"
                             "wait $zero; echo rank0=$?\n";
  const auto started = std::chrono::steady_clock::now();
  const auto result = run_program({"/bin/sh", "-c", script}, work.path());
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(90));
  EXPECT_NE(result.out.find("rank0=1"), std::string::npos) << result.out << read_file(work / "rank0.err");
  const std::string errors = read_file(work / "rank0.err");
  EXPECT_NE(errors.find("saccade: error: rank 0, "), std::string::npos) << errors;
  // The last good checkpoint is whole: saccade eval reads the best one.
  const auto evaluated = run_saccade({"eval", "--run", run.string(), "decode.beam_size=1"}, work.path());
  EXPECT_EQ(evaluated.exit_code, 0) << evaluated.err;
}

}  // namespace
}  // namespace saccade::testing
