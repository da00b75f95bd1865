// Module weights to and from safetensors: round trip, the mismatch report, ignored prefixes,
// DataParallel prefixes, optional BatchNorm counters, dtype conversion.
#include "models/weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <limits>

#include "io/safetensors.h"
#include "models/small_cnn.h"
#include "test_util.h"

namespace saccade {
namespace {

using saccade::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::shared_ptr<SmallCnnImpl> make_cnn(std::vector<int64_t> channels = {4, 8}) {
  EncoderOptions options;
  options.channels = std::move(channels);
  return std::make_shared<SmallCnnImpl>(options);
}

// Every parameter and buffer of `module` by name, detached copies.
std::vector<std::pair<std::string, torch::Tensor>> state_of(const torch::nn::Module& module) {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& item : module.named_parameters())
    state.emplace_back(item.key(), item.value().detach().clone());
  for (const auto& item : module.named_buffers())
    state.emplace_back(item.key(), item.value().detach().clone());
  return state;
}

class WeightsTest : public ::testing::Test {
 protected:
  WeightsTest() { torch::manual_seed(0); }
  TempDir dir_;
};

TEST_F(WeightsTest, SaveThenLoadGivesIdenticalParametersAndOutputs) {
  auto source = make_cnn();
  // Make the BatchNorm buffers non-trivial so they are checked too.
  source->train(true);
  source->forward(torch::randn({4, 3, 16, 16}));
  source->eval();
  const auto path = dir_ / "cnn.safetensors";
  save_state_dict(*source, path);

  auto target = make_cnn();
  target->eval();
  const StateDictReport report = load_state_dict(*target, SafetensorsReader(path));
  EXPECT_TRUE(report.ok()) << report.problems();
  EXPECT_EQ(report.loaded.size(), state_of(*source).size());
  const auto expected = state_of(*source);
  const auto got = state_of(*target);
  ASSERT_EQ(expected.size(), got.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(expected[i].first, got[i].first);
    EXPECT_TRUE(torch::equal(expected[i].second, got[i].second)) << expected[i].first;
  }
  const torch::Tensor images = torch::randn({2, 3, 16, 16});
  EXPECT_TRUE(torch::equal(source->forward(images), target->forward(images)));
}

// A NaN in a damaged file is named with its key, and nothing of the file is copied.
TEST_F(WeightsTest, NonFiniteValuesAreRefusedBeforeAnythingIsCopied) {
  auto source = make_cnn();
  const auto state = state_of(*source);
  const std::string first = state.front().first;  // a weight
  std::vector<std::pair<std::string, torch::Tensor>> tensors = state;
  tensors.front().second.view(-1)[0] = std::numeric_limits<float>::infinity();
  const auto path = dir_ / "damaged.safetensors";
  save_safetensors(path, tensors);
  auto target = make_cnn();
  const auto before = state_of(*target);
  try {
    load_state_dict(*target, SafetensorsReader(path));
    FAIL() << "an infinity was loaded";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()), "Weights file '" + path.string() + "' holds a NaN or infinite value in '" +
                                       first + "': it cannot be the module");
  }
  const auto after = state_of(*target);
  for (size_t i = 0; i < before.size(); ++i)
    EXPECT_TRUE(torch::equal(before[i].second, after[i].second)) << before[i].first;
}

TEST_F(WeightsTest, MismatchesAreListedInOneError) {
  auto module = make_cnn();
  auto state = state_of(*module);
  std::vector<std::pair<std::string, torch::Tensor>> file;
  for (auto& [name, tensor] : state) {
    if (name == "stages.1.conv.bias") continue;                               // missing
    if (name == "stages.0.conv.weight") tensor = torch::zeros({4, 3, 5, 5});  // wrong shape
    file.emplace_back(name, tensor);
  }
  file.emplace_back("stages.2.conv.weight", torch::zeros({1}));  // unexpected
  const auto path = dir_ / "bad.safetensors";
  save_safetensors(path, file);

  LoadStateDictOptions options;
  options.destination = "encoder small_cnn";
  try {
    load_state_dict(*module, SafetensorsReader(path), options);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, HasSubstr("does not fit encoder small_cnn"));
    EXPECT_THAT(message, HasSubstr("1 missing key (stages.1.conv.bias)"));
    EXPECT_THAT(message, HasSubstr("1 unexpected key (stages.2.conv.weight)"));
    EXPECT_THAT(
        message,
        HasSubstr("1 shape mismatch (stages.0.conv.weight: file [4, 3, 5, 5], module [4, 3, 3, 3])"));
    EXPECT_THAT(message, HasSubstr(path.string()));
  }
  // Strict loading copies nothing when it fails.
  for (const auto& [name, tensor] : state_of(*module)) {
    for (const auto& [original_name, original] : state) {
      if (name == original_name && name != "stages.0.conv.weight") {
        EXPECT_TRUE(torch::equal(tensor, original)) << name;
      }
    }
  }

  options.strict = false;
  const StateDictReport report = load_state_dict(*module, SafetensorsReader(path), options);
  EXPECT_THAT(report.missing, ElementsAre("stages.1.conv.bias"));
  EXPECT_THAT(report.unexpected, ElementsAre("stages.2.conv.weight"));
  ASSERT_EQ(report.mismatched.size(), 1u);
  EXPECT_FALSE(report.ok());
  EXPECT_EQ(report.loaded.size(), state.size() - 2);
}

TEST_F(WeightsTest, LongListsAreShortened) {
  auto module = make_cnn({4, 4, 4, 4, 4});
  const auto path = dir_ / "empty.safetensors";
  save_safetensors(path, {{"other", torch::zeros({1})}});
  try {
    load_state_dict(*module, SafetensorsReader(path));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& error) {
    // 5 stages x (conv weight, bias, bn weight, bias, running mean, var) = 30; counters optional.
    EXPECT_THAT(error.what(), HasSubstr("30 missing keys ("));
    EXPECT_THAT(error.what(), HasSubstr(", ... 22 more)"));
  }
}

TEST_F(WeightsTest, IgnoredPrefixesDataParallelPrefixAndOptionalCounters) {
  auto source = make_cnn();
  std::vector<std::pair<std::string, torch::Tensor>> file;
  for (auto& [name, tensor] : state_of(*source)) {
    if (name.find("num_batches_tracked") != std::string::npos) continue;  // as in timm files
    file.emplace_back("module." + name, tensor);
  }
  file.emplace_back("module.fc.weight", torch::zeros({10, 8}));
  file.emplace_back("module.classifier.6.bias", torch::zeros({10}));
  const auto path = dir_ / "dp.safetensors";
  save_safetensors(path, file);

  auto target = make_cnn();
  LoadStateDictOptions options;
  options.ignored_prefixes = {"fc.", "classifier."};
  const StateDictReport report = load_state_dict(*target, SafetensorsReader(path), options);
  EXPECT_TRUE(report.ok()) << report.problems();
  EXPECT_THAT(report.ignored, ElementsAre("classifier.6.bias", "fc.weight"));
  EXPECT_TRUE(torch::equal(
      target->named_parameters()["stages.0.conv.weight"],
      source->named_parameters()["stages.0.conv.weight"]));

  // Without the ignore list, the cut-off parts are unexpected keys.
  EXPECT_THROW(load_state_dict(*target, SafetensorsReader(path)), std::invalid_argument);
}

TEST_F(WeightsTest, HalfPrecisionFilesLoadIntoFloatModules) {
  auto source = make_cnn();
  std::vector<std::pair<std::string, torch::Tensor>> file;
  for (auto& [name, tensor] : state_of(*source)) {
    file.emplace_back(name, tensor.is_floating_point() ? tensor.to(torch::kHalf) : tensor);
  }
  const auto path = dir_ / "half.safetensors";
  save_safetensors(path, file);
  auto target = make_cnn();
  load_state_dict(*target, SafetensorsReader(path));
  const torch::Tensor got = target->named_parameters()["stages.1.conv.weight"];
  EXPECT_EQ(got.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(
      got, source->named_parameters()["stages.1.conv.weight"].to(torch::kHalf).to(torch::kFloat)));
}

}  // namespace
}  // namespace saccade
