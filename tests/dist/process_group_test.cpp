// ProcessGroup on loopback: two ranks (threads of this process) meet through a TCPStore and
// exchange tensors and text; the job's variables are parsed and checked with one-line errors.
#include "dist/process_group.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <functional>
#include <future>
#include <stdexcept>

#include "test_util.h"

namespace saccade {
namespace {

using testing::free_port;

DistOptions rank_of_two(int rank, int port, int timeout_s = 20) {
  DistOptions options;
  options.rank = rank;
  options.world_size = 2;
  options.local_rank = rank;
  options.local_world_size = 2;
  options.master_port = port;
  options.timeout = std::chrono::seconds(timeout_s);
  return options;
}

// Runs `body` as rank 0 and rank 1 at once; rethrows what either threw.
void run_two_ranks(const std::function<void(ProcessGroup&)>& body) {
  const int port = free_port();
  auto rank = [&](int r) {
    ProcessGroup group(rank_of_two(r, port));
    body(group);
  };
  auto other = std::async(std::launch::async, rank, 1);
  rank(0);
  other.get();
}

TEST(ProcessGroup, BroadcastSumsAndGathersAcrossTwoRanks) {
  run_two_ranks([](ProcessGroup& group) {
    const double r = group.rank();
    auto weights = torch::full({2, 3}, 10.0 * (r + 1));  // rank 0: 10s, rank 1: 20s
    group.broadcast({weights});
    EXPECT_TRUE(torch::equal(weights, torch::full({2, 3}, 10.0))) << "rank " << r;
    auto gradient = torch::tensor({1.0 + r, 2.0 * r});  // [1, 0] and [2, 2]
    auto count = torch::tensor({static_cast<int64_t>(3 + r)});
    group.all_reduce_sum({gradient, count});
    EXPECT_TRUE(torch::equal(gradient, torch::tensor({3.0, 2.0}))) << "rank " << r;
    EXPECT_EQ(count.item<int64_t>(), 7);
    const auto texts = group.all_gather(r == 0 ? "a red circle" : "");
    EXPECT_EQ(texts, (std::vector<std::string>{"a red circle", ""}));
    group.barrier();
  });
}

TEST(ProcessGroup, RanksOnDifferentKindsOfDeviceAreRefused) {
  const int port = free_port();
  const auto join = [&](int rank, c10::Device device) {
    return testing::message_of<std::runtime_error>(
        [&] { ProcessGroup group(rank_of_two(rank, port), device); });
  };
  auto other = std::async(std::launch::async, join, 1, c10::Device(c10::DeviceType::CUDA, 0));
  const std::string message = join(0, c10::Device(c10::DeviceType::CPU));
  EXPECT_EQ(
      message,
      "rank 1 computes on cuda and rank 0 on cpu: every rank needs the same kind of device (runtime.device, "
      "and a GPU for each worker)");
  EXPECT_EQ(other.get(), message);
}

// Gloo failed deep inside ("enforce fail ... 136 vs 272") when the ranks disagreed on WORLD_SIZE.
TEST(ProcessGroup, RanksStartedWithDifferentWorldSizesAreRefusedInOneLine) {
  const int port = free_port();
  const auto join = [&](int rank, int world_size) {
    DistOptions options = rank_of_two(rank, port, /*timeout_s=*/5);
    options.world_size = options.local_world_size = world_size;
    return testing::message_of<std::invalid_argument>([&] { ProcessGroup group(options); });
  };
  auto other = std::async(std::launch::async, join, 1, 3);
  const std::string where = "127.0.0.1:" + std::to_string(port);
  const std::string mismatch = "rank 1 was started with WORLD_SIZE=3 and rank 0 with WORLD_SIZE=2";
  EXPECT_EQ(join(0, 2), "rank 0 could not form the job at " + where + ": " + mismatch);
  EXPECT_EQ(other.get(), "rank 1 could not form the job at " + where + ": " + mismatch);
}

TEST(ProcessGroup, RanksOfDifferentJobsAreRefusedNamingTheFirstKeyThatDiffers) {
  run_two_ranks([](ProcessGroup& group) {
    EXPECT_NO_THROW(group.require_same_job("model=soft\nlr=0.1"));
    const auto refusal = [&](const std::string& rank0_job, const std::string& rank1_job) {
      return testing::message_of<std::invalid_argument>(
          [&] { group.require_same_job(group.is_main() ? rank0_job : rank1_job); });
    };
    const std::string advice = ": start every rank with the same command line, config and dataset files";
    EXPECT_EQ(
        refusal("model=soft\nlr=0.1\nepochs=2", "model=soft\nlr=0.5\nepochs=3"),
        "rank 1's job differs from rank 0's at lr (0.5 on rank 1, 0.1 on rank 0)" + advice);
    EXPECT_EQ(
        refusal("model=soft", "model=soft\nseed=7"),
        "rank 1's job differs from rank 0's at seed (7 on rank 1, (not set) on rank 0)" + advice);
  });
}

TEST(ProcessGroup, AWorldOfOneNeedsNoPeers) {
  ProcessGroup group(DistOptions{});
  auto values = torch::tensor({1.5, -2.0});
  group.all_reduce_sum({values});
  group.broadcast({values});
  EXPECT_TRUE(torch::equal(values, torch::tensor({1.5, -2.0})));
  EXPECT_EQ(group.all_gather("only"), std::vector<std::string>{"only"});
  EXPECT_TRUE(group.is_main());
}

TEST(ProcessGroup, APeerThatNeverJoinsIsAnErrorWithinTheTimeout) {
  const auto started = std::chrono::steady_clock::now();
  try {
    ProcessGroup group(rank_of_two(0, free_port(), 2));
    FAIL() << "expected std::runtime_error";
  } catch (const std::runtime_error& error) {
    const std::string message = error.what();
    EXPECT_EQ(message.rfind("rank 0 could not ", 0), 0u) << message;
    EXPECT_NE(message.find("127.0.0.1:"), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
}

TEST(ProcessGroup, JobVariablesAreReadAndChecked) {
  setenv("WORLD_SIZE", "4", 1);
  setenv("RANK", "3", 1);
  setenv("LOCAL_RANK", "1", 1);
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("MASTER_ADDR", "node7", 1);
  setenv("MASTER_PORT", "29511", 1);
  const DistOptions options = dist_options_from_environment(9);
  EXPECT_EQ(options.world_size, 4);
  EXPECT_EQ(options.rank, 3);
  EXPECT_EQ(options.local_rank, 1);
  EXPECT_EQ(options.local_world_size, 2);
  EXPECT_EQ(options.master_addr, "node7");
  EXPECT_EQ(options.master_port, 29511);
  EXPECT_EQ(options.timeout, std::chrono::seconds(9));
  EXPECT_NO_THROW(validate(options));
  const auto refusal = [] {
    return testing::message_of<std::invalid_argument>([] { validate(dist_options_from_environment(9)); });
  };
  setenv("LOCAL_WORLD_SIZE", "1", 1);
  EXPECT_EQ(refusal(), "LOCAL_RANK must be in [0, LOCAL_WORLD_SIZE) = [0, 1), got 1");
  setenv("LOCAL_WORLD_SIZE", "2", 1);
  setenv("RANK", "4", 1);
  EXPECT_EQ(refusal(), "RANK must be in [0, WORLD_SIZE) = [0, 4), got 4");
  setenv("WORLD_SIZE", "two", 1);
  EXPECT_EQ(refusal(), "WORLD_SIZE='two' is not an integer");
  for (const char* name :
       {"WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"})
    unsetenv(name);
  const DistOptions single = dist_options_from_environment(300);
  EXPECT_EQ(single.world_size, 1);
  EXPECT_EQ(single.rank, 0);
  EXPECT_EQ(single.local_world_size, 1);
}

}  // namespace
}  // namespace saccade
