// ResNet encoder: torchvision's architecture and initialization, cut after layer4.
#include "models/resnet.h"

#include <torch/nn/init.h>

#include <stdexcept>

namespace saccade {
namespace {

torch::nn::Conv2d conv(
    int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding) {
  return torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, kernel)
                               .stride(stride)
                               .padding(padding)
                               .bias(false));
}

// Registers `conv` as conv<n> and a BatchNorm of its output as bn<n> in `block` (torchvision's
// names) and returns the two as one unit.
ConvBatchNorm register_conv_bn(torch::nn::Module& block, int n, torch::nn::Conv2d conv) {
  const int64_t channels = conv->options.out_channels();
  auto registered = block.register_module("conv" + std::to_string(n), conv);
  return ConvBatchNorm(
      registered, block.register_module("bn" + std::to_string(n), torch::nn::BatchNorm2d(channels)));
}

// The 1x1 projection shortcut torchvision calls `downsample` ({0: conv, 1: bn}), registered in
// `block` where the shape changes; an empty unit (the identity) otherwise.
ConvBatchNorm register_shortcut(
    torch::nn::Module& block, int64_t in_channels, int64_t out_channels, int64_t stride) {
  if (stride == 1 && in_channels == out_channels) return {};
  torch::nn::Conv2d projection = conv(in_channels, out_channels, 1, stride, 0);
  torch::nn::BatchNorm2d batchnorm(out_channels);
  block.register_module("downsample", torch::nn::Sequential(projection, batchnorm));
  return ConvBatchNorm(projection, batchnorm);
}

// Spatial size after a conv/pool with kernel k, stride 2, padding (k-1)/2 as in ResNet's stem
// and stride-2 blocks: floor((n - 1) / 2) + 1.
int64_t halve(int64_t n) {
  return n <= 0 ? 0 : (n - 1) / 2 + 1;
}

}  // namespace

BasicBlockImpl::BasicBlockImpl(int64_t in_channels, int64_t planes, int64_t stride) {
  unit1_ = register_conv_bn(*this, 1, conv(in_channels, planes, 3, stride, 1));
  unit2_ = register_conv_bn(*this, 2, conv(planes, planes, 3, 1, 1));
  shortcut_ = register_shortcut(*this, in_channels, planes * kExpansion, stride);
}

torch::Tensor BasicBlockImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = torch::relu(unit1_(x));                       // [B, P, H/s, W/s]
  out = unit2_(out);                                                // [B, P, H/s, W/s]
  out = add_any_layout(out, shortcut_.empty() ? x : shortcut_(x));  // [B, P, H/s, W/s]
  return torch::relu(out);                                          // [B, P, H/s, W/s]
}

BottleneckImpl::BottleneckImpl(int64_t in_channels, int64_t planes, int64_t stride) {
  unit1_ = register_conv_bn(*this, 1, conv(in_channels, planes, 1, 1, 0));
  unit2_ = register_conv_bn(*this, 2, conv(planes, planes, 3, stride, 1));
  unit3_ = register_conv_bn(*this, 3, conv(planes, planes * kExpansion, 1, 1, 0));
  shortcut_ = register_shortcut(*this, in_channels, planes * kExpansion, stride);
}

torch::Tensor BottleneckImpl::forward(const torch::Tensor& x) {
  torch::Tensor out = torch::relu(unit1_(x));                       // [B, P, H, W]
  out = torch::relu(unit2_(out));                                   // [B, P, H/s, W/s]
  out = unit3_(out);                                                // [B, 4P, H/s, W/s]
  out = add_any_layout(out, shortcut_.empty() ? x : shortcut_(x));  // [B, 4P, H/s, W/s]
  return torch::relu(out);                                          // [B, 4P, H/s, W/s]
}

ResNetImpl::ResNetImpl(int64_t depth, const EncoderOptions& options)
    : EncoderImpl(options, /*freeze_batchnorm=*/true) {
  std::array<int64_t, 4> counts{};
  bool bottleneck = false;
  switch (depth) {
    case 18:
      counts = {2, 2, 2, 2};
      break;
    case 34:
      counts = {3, 4, 6, 3};
      break;
    case 50:
      counts = {3, 4, 6, 3};
      bottleneck = true;
      break;
    case 101:
      counts = {3, 4, 23, 3};
      bottleneck = true;
      break;
    case 152:
      counts = {3, 8, 36, 3};
      bottleneck = true;
      break;
    default:
      throw std::invalid_argument(
          "ResNet depth must be 18, 34, 50, 101 or 152, got " + std::to_string(depth));
  }
  conv1_ = register_module("conv1", conv(3, 64, 7, 2, 3));
  bn1_ = register_module("bn1", torch::nn::BatchNorm2d(64));
  stem_ = ConvBatchNorm(conv1_, bn1_);
  const int64_t expansion = bottleneck ? BottleneckImpl::kExpansion : BasicBlockImpl::kExpansion;
  int64_t in_channels = 64;
  for (size_t layer = 0; layer < 4; ++layer) {
    const int64_t planes = int64_t{64} << layer;
    torch::nn::Sequential blocks;
    for (int64_t i = 0; i < counts[layer]; ++i) {
      const int64_t stride = (layer > 0 && i == 0) ? 2 : 1;
      if (bottleneck) {
        blocks->push_back(Bottleneck(in_channels, planes, stride));
      } else {
        blocks->push_back(BasicBlock(in_channels, planes, stride));
      }
      in_channels = planes * expansion;
    }
    layers_[layer] = register_module("layer" + std::to_string(layer + 1), blocks);
  }
  dim_ = in_channels;

  // torchvision's init: Kaiming-normal (fan_out, ReLU) convolutions, BatchNorm weight 1, bias 0.
  for (auto& module : modules(/*include_self=*/false)) {
    if (auto* c = module->as<torch::nn::Conv2dImpl>()) {
      torch::nn::init::kaiming_normal_(c->weight, 0.0, torch::kFanOut, torch::kReLU);
    } else if (auto* bn = module->as<torch::nn::BatchNorm2dImpl>()) {
      torch::nn::init::ones_(bn->weight);
      torch::nn::init::zeros_(bn->bias);
    }
  }
}

torch::Tensor ResNetImpl::run_block(size_t index, const torch::Tensor& x) {
  if (index == 0) {
    const torch::Tensor y = torch::relu(stem_(x));  // [B, 64, H/2, W/2]
    return max_pool2d_any_layout(y, 3, 2, 1);       // [B, 64, H/4, W/4]
  }
  return layers_[index - 1]->forward(x);  // [B, C_l, H_l, W_l]
}

std::vector<std::shared_ptr<torch::nn::Module>> ResNetImpl::block_modules(size_t index) const {
  if (index == 0) return {conv1_.ptr(), bn1_.ptr()};
  return {layers_[index - 1].ptr()};
}

std::array<int64_t, 2> ResNetImpl::native_grid_size(int64_t height, int64_t width) const {
  for (int i = 0; i < 5; ++i) {  // stem conv, max pool, layer2..layer4
    height = halve(height);
    width = halve(width);
  }
  return {height, width};
}

}  // namespace saccade
