// ResNet-18/34/50/101/152 (He et al. 2016) as an encoder, built natively with torchvision's
// parameter names so torchvision and timm state_dicts load by name:
//   conv1, bn1                                   the stem (7x7/2 conv, then 3x3/2 max pool)
//   layer{1..4}.<i>.conv{1,2[,3]}, .bn{1,2[,3]}   residual blocks (Bottleneck from ResNet-50 on,
//   layer{1..4}.0.downsample.{0,1}                stride on the 3x3 conv as in torchvision v1.5)
// The network is cut after layer4 (avgpool and fc dropped): 512 (18/34) or 2048 (50+) channels,
// 7x7 for a 224 px input. Blocks for fine-tuning: [stem, layer1, layer2, layer3, layer4].
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/conv.h>

#include "models/conv_batchnorm.h"
#include "models/encoder.h"

namespace saccade {

// The blocks take dense tensors, or oneDNN tensors when no gradient is needed and their
// BatchNorms are in eval mode (ConvBatchNorm); the output has the input's layout.

// Two 3x3 convs with an identity (or 1x1 projection) shortcut: ResNet-18/34.
class BasicBlockImpl : public torch::nn::Module {
 public:
  BasicBlockImpl(int64_t in_channels, int64_t planes, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);
  static constexpr int64_t kExpansion = 1;

 private:
  // conv1/bn1, conv2/bn2 and the `downsample` projection (only where the shape changes; empty
  // for the identity), registered under torchvision's names.
  ConvBatchNorm unit1_, unit2_, shortcut_;
};
TORCH_MODULE(BasicBlock);

// 1x1 reduce, 3x3 (carrying the stride), 1x1 expand by 4: ResNet-50/101/152.
class BottleneckImpl : public torch::nn::Module {
 public:
  BottleneckImpl(int64_t in_channels, int64_t planes, int64_t stride);
  torch::Tensor forward(const torch::Tensor& x);
  static constexpr int64_t kExpansion = 4;

 private:
  ConvBatchNorm unit1_, unit2_, unit3_, shortcut_;  // as in BasicBlockImpl
};
TORCH_MODULE(Bottleneck);

class ResNetImpl : public EncoderImpl {
 public:
  // depth: 18, 34, 50, 101 or 152 (std::invalid_argument otherwise). Uses options.name and .grid.
  ResNetImpl(int64_t depth, const EncoderOptions& options);
  int64_t feature_dim() const override { return dim_; }

 protected:
  size_t block_count() const override { return 5; }
  torch::Tensor run_block(size_t index, const torch::Tensor& x) override;
  std::vector<std::shared_ptr<torch::nn::Module>> block_modules(size_t index) const override;
  std::array<int64_t, 2> native_grid_size(int64_t height, int64_t width) const override;
  bool runs_onednn_tensors() const override { return true; }

 private:
  int64_t dim_ = 0;
  torch::nn::Conv2d conv1_{nullptr};
  torch::nn::BatchNorm2d bn1_{nullptr};
  ConvBatchNorm stem_;
  std::array<torch::nn::Sequential, 4> layers_{nullptr, nullptr, nullptr, nullptr};  // layer1..layer4
};

}  // namespace saccade
