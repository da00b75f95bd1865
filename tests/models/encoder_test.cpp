// Encoders: grid shapes, torchvision names and parameter counts, freezing and fine-tuning,
// BatchNorm modes, the registry, option validation, config files, TorchScript encoders.
#include "models/encoder.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <yaml-cpp/yaml.h>

#include "kernels/inference_precision.h"
#include "kernels/kernel_isa.h"
#include "models/small_cnn.h"
#include "models/weights.h"
#include "test_util.h"

namespace saccade {
namespace {

using saccade::testing::TempDir;
using ::testing::HasSubstr;

EncoderOptions options_for(const std::string& name, int64_t trainable_blocks = 0) {
  EncoderOptions options;
  options.name = name;
  options.trainable_blocks = trainable_blocks;
  return options;
}

std::vector<torch::nn::BatchNorm2dImpl*> batchnorms(torch::nn::Module& module) {
  std::vector<torch::nn::BatchNorm2dImpl*> found;
  for (const auto& child : module.modules(/*include_self=*/false)) {
    if (auto* bn = child->as<torch::nn::BatchNorm2dImpl>()) found.push_back(bn);
  }
  return found;
}

class EncoderTest : public ::testing::Test {
 protected:
  EncoderTest() { torch::manual_seed(0); }
};

TEST_F(EncoderTest, SmallCnnGridFollowsImageSizeOrTheConfiguredGrid) {
  EncoderOptions options;  // small_cnn, channels {32, 64, 128, 128}
  Encoder encoder = build_encoder(options);
  EXPECT_EQ(encoder->annotation_dim(), 128);
  EXPECT_EQ(encoder->num_blocks(), 4);
  EXPECT_EQ(encoder->trainable_blocks(), 4);
  EXPECT_EQ(encoder->grid_size(64, 64), (std::array<int64_t, 2>{8, 8}));
  EXPECT_EQ(encoder->grid_size(96, 80), (std::array<int64_t, 2>{12, 10}));
  EXPECT_EQ(encoder(torch::randn({2, 3, 64, 64})).sizes(), torch::IntArrayRef({2, 64, 128}));
  EXPECT_EQ(encoder(torch::randn({1, 3, 96, 80})).sizes(), torch::IntArrayRef({1, 120, 128}));

  options.grid = std::array<int64_t, 2>{7, 7};
  options.channels = {16, 32, 48};
  Encoder pooled = build_encoder(options);
  EXPECT_EQ(pooled->annotation_dim(), 48);
  EXPECT_EQ(pooled->grid_size(96, 96), (std::array<int64_t, 2>{7, 7}));
  EXPECT_EQ(pooled(torch::randn({3, 3, 96, 96})).sizes(), torch::IntArrayRef({3, 49, 48}));
  EXPECT_EQ(pooled->forward_grid(torch::randn({3, 3, 96, 96})).sizes(), torch::IntArrayRef({3, 48, 7, 7}));
}

// With every weight positive and the BatchNorm an identity, a one-pixel image lights exactly the
// cells whose receptive field holds that pixel. Worked by hand along one axis for the pixel at 32
// of 64: the convolutions widen the lit span by one cell a side, each pool halves it.
//   stride 8: conv 31..33, pool 15..16, conv 14..17, pool 7..8, conv 6..9, pool 3..4, conv 2..5
//   stride 4: the same to conv 6..9, then the conv of dilation 2: 4..11
// Here both light pixels 16..47; three stages without the dilated one light cells 6..9, pixels
// 24..39.
TEST_F(EncoderTest, SmallCnnOutputStrideKeepsWhatEachCellSees) {
  auto lit_cells = [](const EncoderOptions& options) {
    Encoder encoder = build_encoder(options);
    encoder->eval();
    torch::NoGradGuard no_grad;
    for (auto& parameter : encoder->named_parameters()) {
      const bool conv_weight = parameter.key().find("conv.weight") != std::string::npos;
      parameter.value().fill_(conv_weight ? 0.05 : 0.0);
      if (parameter.key().find("bn.weight") != std::string::npos) parameter.value().fill_(1.0);
    }
    torch::Tensor image = torch::zeros({1, 3, 64, 64});
    image.index_put_({0, torch::indexing::Slice(), 32, 32}, 1.0);
    const torch::Tensor grid = encoder->forward_grid(image);  // [1, C, H', W']
    return grid[0].amax(0).gt(0);                             // [H', W']
  };
  auto span = [](const torch::Tensor& lit) {  // first and last lit row and column
    const torch::Tensor rows = lit.any(1).nonzero().flatten(), cols = lit.any(0).nonzero().flatten();
    return std::array<int64_t, 4>{
        rows.min().item<int64_t>(), rows.max().item<int64_t>(), cols.min().item<int64_t>(),
        cols.max().item<int64_t>()};
  };
  EncoderOptions options;
  options.channels = {4, 4, 4, 4};
  const torch::Tensor coarse = lit_cells(options);
  ASSERT_EQ(coarse.sizes(), torch::IntArrayRef({8, 8}));
  EXPECT_EQ(span(coarse), (std::array<int64_t, 4>{2, 5, 2, 5}));
  EXPECT_EQ(coarse.sum().item<int64_t>(), 16);

  options.output_stride = 4;
  const torch::Tensor fine = lit_cells(options);
  ASSERT_EQ(fine.sizes(), torch::IntArrayRef({16, 16}));
  EXPECT_EQ(span(fine), (std::array<int64_t, 4>{4, 11, 4, 11}));
  EXPECT_EQ(fine.sum().item<int64_t>(), 64);

  options.output_stride = std::nullopt;
  options.channels = {4, 4, 4};
  EXPECT_EQ(span(lit_cells(options)), (std::array<int64_t, 4>{6, 9, 6, 9}));

  // The weights keep their names and shapes: a stride-8 encoder's state loads into a stride-4 one.
  options.channels = {4, 4, 4, 4};
  options.output_stride = 4;
  Encoder dilated = build_encoder(options);
  options.output_stride = 8;
  const auto pooled = build_encoder(options)->named_parameters();
  for (const auto& parameter : dilated->named_parameters()) {
    ASSERT_TRUE(pooled.contains(parameter.key())) << parameter.key();
    EXPECT_EQ(pooled[parameter.key()].sizes(), parameter.value().sizes()) << parameter.key();
  }
  EXPECT_EQ(dilated->grid_size(96, 80), (std::array<int64_t, 2>{24, 20}));
  options.output_stride = 1;
  EXPECT_EQ(build_encoder(options)->grid_size(64, 64), (std::array<int64_t, 2>{64, 64}));

  // Feature caches record a stride only when it changes the network.
  options.output_stride = 8;
  EXPECT_EQ(describe_annotations(options, ImageOptions{}).count("encoder.output_stride"), 0U);
  options.output_stride = 4;
  EXPECT_EQ(describe_annotations(options, ImageOptions{}).at("encoder.output_stride"), "4");
}

TEST_F(EncoderTest, AnnotationsAreTheGridFlattenedRowMajor) {
  Encoder encoder = build_encoder(EncoderOptions{});
  encoder->eval();
  const torch::Tensor images = torch::randn({2, 3, 64, 48});
  const torch::Tensor grid = encoder->forward_grid(images);  // [2, 128, 8, 6]
  const torch::Tensor annotations = encoder(images);         // [2, 48, 128]
  ASSERT_EQ(grid.sizes(), torch::IntArrayRef({2, 128, 8, 6}));
  ASSERT_EQ(annotations.sizes(), torch::IntArrayRef({2, 48, 128}));
  EXPECT_TRUE(annotations.is_contiguous());
  for (int64_t y = 0; y < 8; ++y) {
    for (int64_t x = 0; x < 6; ++x) {
      EXPECT_TRUE(torch::equal(annotations.select(1, y * 6 + x), grid.select(3, x).select(2, y)));
    }
  }
}

TEST_F(EncoderTest, EmptyBatchAndBadInputs) {
  Encoder cnn = build_encoder(EncoderOptions{});
  EXPECT_EQ(cnn(torch::zeros({0, 3, 64, 64})).sizes(), torch::IntArrayRef({0, 64, 128}));
  EXPECT_THAT(
      testing::message_of<std::invalid_argument>([&] {
        cnn(torch::zeros({3, 64, 64}));
      }),
      HasSubstr("expects float images [B, 3, H, W]"));
  EXPECT_THAT(
      testing::message_of<std::invalid_argument>([&] {
        cnn(torch::zeros({1, 1, 64, 64}));
      }),
      HasSubstr("got [1, 1, 64, 64]"));
  EXPECT_THROW(cnn(torch::zeros({1, 3, 64, 64}, torch::kUInt8)), std::invalid_argument);
  EXPECT_THAT(
      testing::message_of<std::invalid_argument>([&] {
        cnn(torch::zeros({1, 3, 4, 64}));
      }),
      HasSubstr("too small for encoder small_cnn"));
  Encoder vgg = build_encoder(options_for("vgg16"));
  EXPECT_THAT(
      testing::message_of<std::invalid_argument>([&] {
        vgg(torch::zeros({1, 3, 15, 15}));
      }),
      HasSubstr("too small for encoder vgg16"));
}

// Parameter counts of torchvision's models without fc / classifier, and state_dict sizes
// (parameters + buffers), as torchvision 0.14 reports them.
TEST_F(EncoderTest, ResNetAndVggMatchTorchvisionLayout) {
  struct Expected {
    std::string name;
    int64_t parameters;
    size_t state_keys;
    int64_t dim;
    int64_t grid_at_224;
  };
  const std::vector<Expected> table = {
      {"resnet18", 11176512, 120, 512, 7},   {"resnet34", 21284672, 216, 512, 7},
      {"resnet50", 23508032, 318, 2048, 7},  {"resnet101", 42500160, 624, 2048, 7},
      {"resnet152", 58143808, 930, 2048, 7}, {"vgg16", 14714688, 26, 512, 14},
      {"vgg19", 20024384, 32, 512, 14},
  };
  for (const auto& expected : table) {
    Encoder encoder = build_encoder(options_for(expected.name));
    EXPECT_EQ(parameter_count(*encoder), expected.parameters) << expected.name;
    EXPECT_EQ(encoder->named_parameters().size() + encoder->named_buffers().size(), expected.state_keys)
        << expected.name;
    EXPECT_EQ(encoder->annotation_dim(), expected.dim) << expected.name;
    EXPECT_EQ(
        encoder->grid_size(224, 224), (std::array<int64_t, 2>{expected.grid_at_224, expected.grid_at_224}))
        << expected.name;
    EXPECT_EQ(encoder->num_blocks(), 5) << expected.name;
  }
  const auto r50 = build_encoder(options_for("resnet50"))->named_parameters();
  for (const char* key :
       {"conv1.weight", "bn1.bias", "layer1.0.downsample.0.weight", "layer1.0.downsample.1.weight",
        "layer4.2.conv3.weight", "layer4.2.bn3.weight"}) {
    EXPECT_TRUE(r50.contains(key)) << key;
  }
  const auto r18 = build_encoder(options_for("resnet18"))->named_parameters();
  EXPECT_FALSE(r18.contains("layer1.0.downsample.0.weight"));
  EXPECT_TRUE(r18.contains("layer2.0.downsample.1.bias"));
  const auto vgg19 = build_encoder(options_for("vgg19"))->named_parameters();
  EXPECT_TRUE(vgg19.contains("features.34.weight"));  // conv5_4
  EXPECT_FALSE(vgg19.contains("features.36.weight"));
  EXPECT_TRUE(
      build_encoder(options_for("vgg16"))->named_parameters().contains("features.28.bias"));  // conv5_3
}

TEST_F(EncoderTest, ResNetGridSizesFollowTorchvisionArithmetic) {
  Encoder encoder = build_encoder(options_for("resnet18"));
  // 7x7/2 conv, 3x3/2 pool, three stride-2 stages: n -> floor((n - 1) / 2) + 1, five times.
  EXPECT_EQ(encoder->grid_size(256, 200), (std::array<int64_t, 2>{8, 7}));
  EXPECT_EQ(encoder->forward_grid(torch::randn({1, 3, 65, 33})).sizes(), torch::IntArrayRef({1, 512, 3, 2}));
  EXPECT_EQ(encoder->grid_size(65, 33), (std::array<int64_t, 2>{3, 2}));
  EncoderOptions pooled = options_for("resnet18");
  pooled.grid = std::array<int64_t, 2>{3, 3};
  EXPECT_EQ(build_encoder(pooled)(torch::randn({2, 3, 64, 64})).sizes(), torch::IntArrayRef({2, 9, 512}));
}

TEST_F(EncoderTest, FrozenEncoderRunsWithoutGradAndKeepsBatchNormStatistics) {
  Encoder encoder = build_encoder(options_for("resnet18", 0));
  for (const auto& parameter : encoder->parameters()) EXPECT_FALSE(parameter.requires_grad());
  encoder->train(true);
  EXPECT_TRUE(encoder->is_training());
  for (auto* bn : batchnorms(*encoder)) EXPECT_FALSE(bn->is_training());
  const torch::Tensor mean = encoder->named_buffers()["layer1.0.bn1.running_mean"].clone();
  const torch::Tensor out = encoder(torch::randn({2, 3, 32, 32}));
  EXPECT_FALSE(out.requires_grad());
  EXPECT_TRUE(torch::equal(encoder->named_buffers()["layer1.0.bn1.running_mean"], mean));
}

TEST_F(EncoderTest, TrainableBlocksFineTuneOnlyTheLastBlocks) {
  Encoder encoder = build_encoder(options_for("resnet18", 2));  // layer3, layer4
  EXPECT_EQ(encoder->trainable_blocks(), 2);
  for (const auto& item : encoder->named_parameters()) {
    const bool trainable = item.key().rfind("layer3.", 0) == 0 || item.key().rfind("layer4.", 0) == 0;
    EXPECT_EQ(item.value().requires_grad(), trainable) << item.key();
  }
  encoder->train(true);
  for (auto* bn : batchnorms(*encoder)) EXPECT_FALSE(bn->is_training());  // pretrained BN stays eval
  const torch::Tensor mean = encoder->named_buffers()["layer4.0.bn1.running_mean"].clone();
  const torch::Tensor out = encoder(torch::randn({2, 3, 32, 32}));
  ASSERT_TRUE(out.requires_grad());
  out.pow(2).sum().backward();
  const auto parameters = encoder->named_parameters();
  EXPECT_TRUE(parameters["layer4.1.conv2.weight"].grad().defined());
  EXPECT_TRUE(parameters["layer3.0.downsample.0.weight"].grad().defined());
  EXPECT_GT(parameters["layer3.0.conv1.weight"].grad().abs().sum().item<float>(), 0.0f);
  EXPECT_FALSE(parameters["layer2.1.conv2.weight"].grad().defined());
  EXPECT_FALSE(parameters["conv1.weight"].grad().defined());
  EXPECT_TRUE(torch::equal(encoder->named_buffers()["layer4.0.bn1.running_mean"], mean));

  Encoder all = build_encoder(options_for("vgg16", -1));
  EXPECT_EQ(all->trainable_blocks(), 5);
  for (const auto& parameter : all->parameters()) EXPECT_TRUE(parameter.requires_grad());
  Encoder last = build_encoder(options_for("vgg16", 1));  // conv5_x: features.24 .. features.28
  for (const auto& item : last->named_parameters()) {
    const int index = std::stoi(item.key().substr(9));
    EXPECT_EQ(item.value().requires_grad(), index >= 24) << item.key();
  }

  EXPECT_THAT(
      testing::message_of<std::invalid_argument>([] { build_encoder(options_for("resnet18", 6)); }),
      HasSubstr("must be in -1 .. 5"));
  EXPECT_THROW(build_encoder(options_for("resnet18", -2)), std::invalid_argument);
}

double relative_error(const torch::Tensor& got, const torch::Tensor& expected) {
  return (got - expected).norm().item<double>() / expected.norm().item<double>();
}

// An encoder in eval mode whose BatchNorms are no identity, so that folding them is tested.
Encoder encoder_with_random_batchnorms(const EncoderOptions& options) {
  Encoder encoder = build_encoder(options);
  torch::NoGradGuard no_grad;
  for (auto* bn : batchnorms(*encoder)) {
    bn->running_mean.uniform_(-0.2, 0.2);
    bn->running_var.uniform_(0.5, 1.5);
    bn->weight.uniform_(0.5, 1.5);
    bn->bias.uniform_(-0.2, 0.2);
  }
  encoder->eval();
  return encoder;
}

// small_cnn with output stride 2: its last two stages dilate by 2 and 4.
EncoderOptions dilated_small_cnn() {
  EncoderOptions options = options_for("small_cnn");
  options.output_stride = 2;
  return options;
}

// The oneDNN path (prepared, BatchNorm-folded weights) against LibTorch's own modules on the
// same weights; the torchvision agreement tests check it against torchvision as well.
TEST_F(EncoderTest, OneDnnPathMatchesTheModulesAndFollowsWeightUpdates) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this LibTorch has no oneDNN";
  for (const auto& [options, blocks] : std::vector<std::pair<EncoderOptions, std::string>>{
           {options_for("resnet18"), "5 of 5"},
           {options_for("vgg16"), "5 of 5"},
           {dilated_small_cnn(), "4 of 4"}}) {
    const std::string& name = options.name;
    Encoder encoder = encoder_with_random_batchnorms(options);
    // Five 224 px images: the oneDNN path runs them as a chunk of four and a chunk of one.
    const torch::Tensor images = torch::randn({5, 3, 224, 224});
    auto both_paths = [&] {
      encoder->set_onednn_inference(true);
      torch::Tensor onednn = encoder->forward_grid(images);
      encoder->set_onednn_inference(false);
      torch::Tensor modules = encoder->forward_grid(images);
      encoder->set_onednn_inference(true);
      return std::make_pair(onednn, modules);
    };
    EXPECT_EQ(encoder->inference_path(images), "oneDNN, prepared float32 weights: " + blocks + " blocks")
        << name;
    const auto [onednn, modules] = both_paths();
    ASSERT_EQ(onednn.sizes(), modules.sizes()) << name;
    EXPECT_FALSE(onednn.is_mkldnn()) << name;
    EXPECT_LT(relative_error(onednn, modules), 1e-5) << name;

    // In-place updates (a state_dict load, an optimizer step) reach the prepared weights.
    {
      torch::NoGradGuard no_grad;
      for (auto& parameter : encoder->parameters()) parameter.mul_(1.1);
      for (auto* bn : batchnorms(*encoder)) bn->running_var.mul_(2.0);
    }
    const auto [onednn_after, modules_after] = both_paths();
    EXPECT_GT(relative_error(modules_after, modules), 0.1) << name << ": the update changed nothing";
    EXPECT_LT(relative_error(onednn_after, modules_after), 1e-5) << name;
  }
}

// Inside a bf16 InferencePrecision, on CPUs with AVX-512 BF16, the oneDNN path runs in bf16 (sums
// in float32): near the float32 modules, as far as bf16's rounding (2^-9 relative per value)
// takes a network, and no nearer; elsewhere it stays float32, bit for bit.
TEST_F(EncoderTest, Bf16OneDnnPathStaysNearTheFloat32Modules) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this LibTorch has no oneDNN";
  for (const auto& [options, blocks] : std::vector<std::pair<EncoderOptions, std::string>>{
           {options_for("resnet18"), "5 of 5"}, {dilated_small_cnn(), "4 of 4"}}) {
    Encoder encoder = encoder_with_random_batchnorms(options);
    const torch::Tensor images = torch::randn({2, 3, 128, 128});
    torch::NoGradGuard no_grad;
    encoder->set_onednn_inference(false);
    const torch::Tensor modules = encoder->forward_grid(images);
    encoder->set_onednn_inference(true);
    const torch::Tensor float32 = encoder->forward_grid(images);
    const InferencePrecision bf16({torch::kCPU, Precision::bf16});
    const torch::Tensor bf16_grid = encoder->forward_grid(images);
    EXPECT_EQ(bf16_grid.scalar_type(), torch::kFloat);
    if (!has_avx512_bf16()) {
      EXPECT_EQ(encoder->inference_path(images), "oneDNN, prepared float32 weights: " + blocks + " blocks");
      EXPECT_TRUE(bf16_grid.equal(float32)) << options.name;
      continue;
    }
    EXPECT_EQ(encoder->inference_path(images), "oneDNN, prepared bf16 weights: " + blocks + " blocks");
    const double error = relative_error(bf16_grid, modules);
    EXPECT_LT(error, 3e-2) << options.name;
    EXPECT_GT(error, 1e-4) << options.name << ": no bf16 rounding shows";
  }
  if (!has_avx512_bf16()) GTEST_SKIP() << "this CPU has no AVX-512 BF16: checked that float32 ran";
}

TEST_F(EncoderTest, OneDnnPathTakesOnlyBlocksThatNeedNoGradient) {
  if (!at::hasMKLDNN()) GTEST_SKIP() << "this LibTorch has no oneDNN";
  Encoder encoder = build_encoder(options_for("resnet18", 2));
  const torch::Tensor images = torch::randn({2, 3, 64, 64});
  encoder->train(true);
  EXPECT_EQ(encoder->inference_path(images), "oneDNN, prepared float32 weights: 3 of 5 blocks");
  {
    torch::NoGradGuard no_grad;
    EXPECT_EQ(
        encoder->inference_path(images), "oneDNN, prepared float32 weights: 3 of 5 blocks");  // training
    encoder->eval();
    EXPECT_EQ(encoder->inference_path(images), "oneDNN, prepared float32 weights: 5 of 5 blocks");
  }
  EXPECT_EQ(encoder->inference_path(images.to(torch::kDouble)), "LibTorch modules");
  encoder->set_onednn_inference(false);
  EXPECT_EQ(encoder->inference_path(images), "LibTorch modules");
  // small_cnn trains its BatchNorms: oneDNN only in eval mode without autograd.
  Encoder small = build_encoder(options_for("small_cnn", -1));
  torch::NoGradGuard no_grad;
  EXPECT_EQ(small->inference_path(images), "LibTorch modules");
  small->eval();
  EXPECT_EQ(small->inference_path(images), "oneDNN, prepared float32 weights: 4 of 4 blocks");
}

TEST_F(EncoderTest, SmallCnnBatchNormTrainsAndFrozenStagesStayInEval) {
  EncoderOptions options;
  options.channels = {8, 8, 8};
  Encoder encoder = build_encoder(options);
  auto mean = [&] { return encoder->named_buffers()["stages.2.bn.running_mean"].clone(); };
  const torch::Tensor before = mean();
  encoder->train(true);
  encoder(torch::randn({4, 3, 16, 16}));
  EXPECT_FALSE(torch::equal(mean(), before));
  encoder->eval();
  const torch::Tensor trained = mean();
  encoder(torch::randn({4, 3, 16, 16}));
  EXPECT_TRUE(torch::equal(mean(), trained));

  options.trainable_blocks = 1;
  Encoder partial = build_encoder(options);
  partial->train(true);
  const auto bns = batchnorms(*partial);
  ASSERT_EQ(bns.size(), 3u);
  EXPECT_FALSE(bns[0]->is_training());
  EXPECT_FALSE(bns[1]->is_training());
  EXPECT_TRUE(bns[2]->is_training());
}

TEST_F(EncoderTest, RegistryListsBuiltinsAndRejectsUnknownNames) {
  const auto names = encoder_registry().names();
  for (const char* name :
       {"small_cnn", "resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "vgg16", "vgg19",
        "torchscript"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  }
  const std::string message =
      testing::message_of<std::invalid_argument>([] { build_encoder(options_for("resnet5")); });
  EXPECT_THAT(message, HasSubstr("Unknown encoder 'resnet5'"));
  EXPECT_THAT(message, HasSubstr("resnet50, small_cnn, torchscript, vgg16, vgg19"));

  static int registrations = 0;  // unique per run, so --gtest_repeat works
  const std::string custom = "test_tiny_" + std::to_string(registrations++);
  encoder_registry().add(custom, [](const EncoderOptions& o) {
    EncoderOptions tiny = o;
    tiny.channels = {2};
    return std::make_shared<SmallCnnImpl>(tiny);
  });
  EXPECT_EQ(build_encoder(options_for(custom, -1))->annotation_dim(), 2);
  EXPECT_THROW(encoder_registry().add(custom, nullptr), std::invalid_argument);
}

TEST_F(EncoderTest, ValidateNamesEachBrokenRule) {
  struct Case {
    std::function<void(EncoderOptions&)> change;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](EncoderOptions& o) { o.trainable_blocks = -3; }, "encoder.trainable_blocks must be -1"},
      {[](EncoderOptions& o) {
         o.grid = std::array<int64_t, 2>{0, 4};
       },
       "encoder.grid must hold two sizes > 0"},
      {[](EncoderOptions& o) { o.channels = {}; }, "encoder.channels must list at least one stage"},
      {[](EncoderOptions& o) {
         o.channels = {8, -1};
       },
       "encoder.channels entries must be > 0"},
      {[](EncoderOptions& o) { o.output_stride = 3; },
       "encoder.output_stride must be a power of two from 1 to 8 for 4 stages, got 3"},
      {[](EncoderOptions& o) {
         o.channels = {8, 8};
         o.output_stride = 4;
       },
       "encoder.output_stride must be a power of two from 1 to 2 for 2 stages, got 4"},
      {[](EncoderOptions& o) { o.output_stride = 0; }, "got 0"},
      {[](EncoderOptions& o) {
         o.channels.assign(33, 4);
         o.output_stride = 1;
       },
       "encoder.channels lists 33 stages, more than 32"},
      {[](EncoderOptions& o) { o.weights = ""; }, "encoder.weights is an empty string"},
      {[](EncoderOptions& o) {
         o.name = "torchscript";
         o.trainable_blocks = 0;
       },
       "encoder.path must name"},
      {[](EncoderOptions& o) {
         o.name = "torchscript";
         o.path = "x.pt";
         o.trainable_blocks = 1;
       },
       "TorchScript encoders run frozen"},
      {[](EncoderOptions& o) {
         o.name = "torchscript";
         o.path = "x.pt";
         o.trainable_blocks = 0;
         o.weights = "w.safetensors";
       },
       "encoder.weights must be null for encoder=torchscript"},
  };
  for (const auto& c : cases) {
    EncoderOptions options;
    c.change(options);
    EXPECT_THAT(testing::message_of<std::invalid_argument>([&] { validate(options); }), HasSubstr(c.message))
        << c.message;
  }
  EXPECT_NO_THROW(validate(EncoderOptions{}));
}

TEST_F(EncoderTest, BuildLoadsWeightsAndIgnoresTheCutOffHead) {
  TempDir dir;
  Encoder source = build_encoder(options_for("resnet18"));
  std::vector<std::pair<std::string, torch::Tensor>> state;
  for (const auto& item : source->named_parameters()) state.emplace_back(item.key(), item.value());
  for (const auto& item : source->named_buffers()) state.emplace_back(item.key(), item.value());
  state.emplace_back("fc.weight", torch::randn({1000, 512}).to(torch::kHalf));
  state.emplace_back("fc.bias", torch::randn({1000}));
  save_safetensors(dir / "r18.safetensors", state);

  EncoderOptions options = options_for("resnet18");
  options.weights = (dir / "r18.safetensors").string();
  Encoder loaded = build_encoder(options);
  const auto expected = source->named_parameters();
  for (const auto& item : loaded->named_parameters()) {
    EXPECT_TRUE(torch::equal(item.value(), expected[item.key()])) << item.key();
  }
  const torch::Tensor images = torch::randn({1, 3, 32, 32});
  source->eval();
  EXPECT_TRUE(torch::allclose(loaded(images), source(images)));

  options.name = "resnet34";
  const std::string message = testing::message_of<std::invalid_argument>([&] { build_encoder(options); });
  EXPECT_THAT(message, HasSubstr("does not fit encoder resnet34"));
  EXPECT_THAT(message, HasSubstr("missing keys (layer1.2."));

  options.weights = (dir / "absent.safetensors").string();
  EXPECT_THROW(build_encoder(options), std::runtime_error);
}

// A TorchScript module defined from source: a strided average of the image through a 1x1 conv
// with known weights, so the expected grid is computed independently here.
TEST_F(EncoderTest, TorchScriptModuleAsEncoder) {
  TempDir dir;
  torch::jit::Module module("Backbone");
  const torch::Tensor weight = torch::randn({5, 3, 1, 1});
  module.register_parameter("weight", weight, /*is_buffer=*/false);
  module.define(R"(
def forward(self, x):
    return torch.conv2d(torch.avg_pool2d(x, 4), self.weight)
)");
  module.save((dir / "backbone.pt").string());

  EncoderOptions options = options_for("torchscript");
  options.path = (dir / "backbone.pt").string();
  options.probe_size = {32, 32};
  Encoder encoder = build_encoder(options);
  EXPECT_EQ(encoder->annotation_dim(), 5);
  EXPECT_EQ(encoder->grid_size(32, 32), (std::array<int64_t, 2>{8, 8}));
  EXPECT_EQ(encoder->grid_size(64, 48), (std::array<int64_t, 2>{16, 12}));
  const torch::Tensor images = torch::randn({2, 3, 16, 24});
  const torch::Tensor expected = torch::conv2d(torch::avg_pool2d(images, 4), weight);  // [2, 5, 4, 6]
  const torch::Tensor got = encoder(images);                                           // [2, 24, 5]
  EXPECT_FALSE(got.requires_grad());
  EXPECT_TRUE(torch::allclose(got, expected.flatten(2).transpose(1, 2)));

  torch::jit::Module flat("Flat");
  flat.define(R"(
def forward(self, x):
    return x.mean(dim=[2, 3])
)");
  flat.save((dir / "flat.pt").string());
  options.path = (dir / "flat.pt").string();
  EXPECT_THAT(
      testing::message_of<std::invalid_argument>([&] { build_encoder(options); }),
      HasSubstr("must return a grid [B, D, H', W']"));

  options.path = (dir / "absent.pt").string();
  EXPECT_THROW(build_encoder(options), std::runtime_error);
}

TEST_F(EncoderTest, OptionsFromConfig) {
  const Config cfg(YAML::Load(R"(
encoder:
  name: resnet101
  weights: weights/resnet101.safetensors
  trainable_blocks: 2
  grid: [14, 14]
  position: coords
)"));
  const EncoderOptions options = encoder_options_from(cfg);
  EXPECT_EQ(options.position, GridPosition::coords);
  EXPECT_EQ(options.name, "resnet101");
  EXPECT_EQ(options.weights.value_or(""), "weights/resnet101.safetensors");
  EXPECT_EQ(options.trainable_blocks, 2);
  EXPECT_EQ(options.grid, (std::array<int64_t, 2>{14, 14}));

  const Config dilated(YAML::Load(R"(
encoder:
  name: small_cnn
  weights: null
  trainable_blocks: -1
  grid: null
  position: none
  channels: [8, 8, 8]
  output_stride: 2
)"));
  EXPECT_EQ(encoder_options_from(dilated).output_stride, std::optional<int64_t>(2));
  YAML::Node saved_before_the_option = YAML::Load(R"(
encoder: {name: small_cnn, weights: null, trainable_blocks: -1, grid: null, position: none, channels: [8]}
)");
  EXPECT_EQ(encoder_options_from(Config(saved_before_the_option)).output_stride, std::nullopt);

  const Config bad_grid(
      YAML::Load("encoder: {name: vgg16, weights: null, trainable_blocks: 0, grid: [1, 2, 3]}"));
  EXPECT_THROW(encoder_options_from(bad_grid), ConfigError);
}

// Every shipped configs/encoder/*.yaml declares the keys its encoder reads, with valid values.
TEST_F(EncoderTest, ShippedEncoderConfigsAreValid) {
  const auto folder = saccade::testing::source_dir() / "configs" / "encoder";
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    YAML::Node root;
    root["encoder"] = YAML::LoadFile(entry.path().string());
    const std::string name = entry.path().stem().string();
    if (name == "torchscript") root["encoder"]["path"] = "backbone.pt";  // mandatory (???) in the file
    const EncoderOptions options = encoder_options_from(Config(root));
    EXPECT_EQ(options.name, name);
    EXPECT_NO_THROW(validate(options)) << name;
    EXPECT_FALSE(options.weights.has_value()) << name;
  }
  EXPECT_EQ(files, 9);
}

}  // namespace
}  // namespace saccade
