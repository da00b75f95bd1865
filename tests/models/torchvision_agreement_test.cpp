// Numerical agreement of the native ResNet/VGG encoders with torchvision: same weights, same
// 224x224 input, same grid within 1e-4 relative (||a - b|| / ||b||). The reference tensors come
// from scripts/make_torchvision_reference.py, run once per test binary into a temp folder; the
// tests skip when no Python with torch + torchvision is found (Debian: python3-torchvision).
// The weights files are stored as F32 (resnet18), BF16 (resnet50) and F16 (vgg16), covering the
// basic block, the bottleneck, VGG, and the loader's dtype conversion on real state_dicts. Each
// network is compared twice: through oneDNN with prepared, BatchNorm-folded weights (the frozen
// encoders' default where LibTorch has oneDNN) and through LibTorch's modules.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>

#include "io/safetensors.h"
#include "models/encoder.h"
#include "test_util.h"

namespace saccade {
namespace {

using saccade::testing::TempDir;

constexpr double kTolerance = 1e-4;

// The first interpreter that imports torchvision: $SACCADE_PYTHON, python3, /usr/bin/python3
// (pyenv or a virtualenv may shadow Debian's python3 on PATH).
std::string find_python() {
  std::vector<std::string> candidates;
  if (const char* chosen = std::getenv("SACCADE_PYTHON")) candidates.emplace_back(chosen);
  candidates.emplace_back("python3");
  candidates.emplace_back("/usr/bin/python3");
  for (const auto& python : candidates) {
    const std::string command = python + " -c 'import torch, torchvision' > /dev/null 2>&1";
    if (std::system(command.c_str()) == 0) return python;
  }
  return "";
}

class TorchvisionAgreementTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    python_ = find_python();
    if (python_.empty()) {
      skip_reason_ = "no python3 with torch and torchvision (apt-get install python3-torchvision)";
      return;
    }
    dir_ = std::make_unique<TempDir>();
    const std::string command =
        python_ + " " +
        (saccade::testing::source_dir() / "scripts" / "make_torchvision_reference.py").string() + " --out " +
        dir_->path().string() + " --arch resnet18:F32,resnet50:BF16,vgg16:F16 > " +
        (dir_->path() / "log.txt").string() + " 2>&1";
    if (std::system(command.c_str()) != 0) {
      failure_ = "the reference script failed: " + saccade::testing::read_file(dir_->path() / "log.txt");
    }
  }
  static void TearDownTestSuite() { dir_.reset(); }

  void SetUp() override {
    if (!skip_reason_.empty()) GTEST_SKIP() << skip_reason_;
    ASSERT_TRUE(failure_.empty()) << failure_;
  }

  // Builds `arch` from the exported weights, runs the reference input, compares the grids.
  static void expect_agreement(const std::string& arch) {
    EncoderOptions options;
    options.name = arch;
    options.weights = (dir_->path() / (arch + ".weights.safetensors")).string();
    options.trainable_blocks = 0;
    Encoder encoder = build_encoder(options);
    const SafetensorsReader reference(dir_->path() / (arch + ".reference.safetensors"));
    const torch::Tensor input = reference.get("input", torch::kFloat);    // [1, 3, 224, 224]
    const torch::Tensor expected = reference.get("grid", torch::kFloat);  // [1, D, H', W']
    for (const bool onednn : {true, false}) {
      encoder->set_onednn_inference(onednn);
      expect_close(
          arch + " (" + encoder->inference_path(input) + ")", arch + (onednn ? "_onednn" : "_modules"),
          encoder->forward_grid(input), expected);
    }
  }

  // `what` names the case in messages, `key` in the test's recorded properties.
  static void expect_close(
      const std::string& what,
      const std::string& key,
      const torch::Tensor& got,
      const torch::Tensor& expected) {
    ASSERT_EQ(got.sizes(), expected.sizes()) << what;

    const torch::Tensor diff = (got - expected).abs();
    const double relative = (got - expected).norm().item<double>() / expected.norm().item<double>();
    const int64_t worst = diff.flatten().argmax().item<int64_t>();
    std::ostringstream report;
    report << what << ": relative error " << relative << ", max abs diff " << diff.max().item<double>()
           << " at flat index " << worst << " (got " << got.flatten()[worst].item<double>()
           << ", torchvision " << expected.flatten()[worst].item<double>() << ", reference norm "
           << expected.norm().item<double>() << ")";
    std::cout << "[ agreement ] " << report.str() << "\n";
    ::testing::Test::RecordProperty(key + "_relative_error", std::to_string(relative));
    EXPECT_LT(relative, kTolerance) << report.str();
  }

  static inline std::string python_;
  static inline std::string skip_reason_;
  static inline std::string failure_;
  static inline std::unique_ptr<TempDir> dir_;
};

TEST_F(TorchvisionAgreementTest, ResNet18BasicBlocks) {
  expect_agreement("resnet18");
}
TEST_F(TorchvisionAgreementTest, ResNet50Bottlenecks) {
  expect_agreement("resnet50");
}
TEST_F(TorchvisionAgreementTest, Vgg16) {
  expect_agreement("vgg16");
}

}  // namespace
}  // namespace saccade
