// VGG encoder: torchvision's `features` up to the last ReLU, and torchvision's initialization.
#include "models/vgg.h"

#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/pooling.h>

#include <stdexcept>

namespace saccade {

VggImpl::VggImpl(int64_t depth, const EncoderOptions& options)
    : EncoderImpl(options, /*freeze_batchnorm=*/true) {
  // Convs per stage (torchvision's configurations "D" and "E").
  std::array<int, 5> convs{};
  if (depth == 16) {
    convs = {2, 2, 3, 3, 3};
  } else if (depth == 19) {
    convs = {2, 2, 4, 4, 4};
  } else {
    throw std::invalid_argument("VGG depth must be 16 or 19, got " + std::to_string(depth));
  }
  features_ = register_module("features", torch::nn::Sequential());
  int64_t in_channels = 3;
  for (size_t stage = 0; stage < convs.size(); ++stage) {
    const int64_t out_channels = std::min<int64_t>(int64_t{64} << stage, 512);
    const size_t begin = features_->size();
    for (int i = 0; i < convs[stage]; ++i) {
      auto conv = torch::nn::Conv2d(torch::nn::Conv2dOptions(in_channels, out_channels, 3).padding(1));
      torch::nn::init::kaiming_normal_(conv->weight, 0.0, torch::kFanOut, torch::kReLU);
      torch::nn::init::zeros_(conv->bias);
      features_->push_back(conv);
      features_->push_back(torch::nn::ReLU(torch::nn::ReLUOptions().inplace(true)));
      in_channels = out_channels;
    }
    // The last stage's pool is where the encoder is cut.
    if (stage + 1 < convs.size())
      features_->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2).stride(2)));
    stages_.emplace_back(begin, features_->size());
  }
  for (size_t i = 0; i < features_->size(); ++i) {
    auto conv = std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(features_->ptr(i));
    convs_.push_back(conv ? ConvBatchNorm(torch::nn::Conv2d(conv)) : ConvBatchNorm());
  }
}

torch::Tensor VggImpl::run_block(size_t index, const torch::Tensor& x) {
  torch::Tensor y = x;  // [B, C, H, W], dense or oneDNN
  const auto first = features_->begin();
  for (size_t i = stages_[index].first; i < stages_[index].second; ++i) {
    // Convs through their unit and pools through max_pool2d_any_layout (both take oneDNN
    // tensors); ReLU takes both layouts.
    if (!convs_[i].empty()) {
      y = convs_[i](y);  // [B, C_i, H_i, W_i]
    } else if (const auto pool = std::dynamic_pointer_cast<torch::nn::MaxPool2dImpl>(features_->ptr(i))) {
      y = max_pool2d_any_layout(y, (*pool->options.kernel_size())[0], (*pool->options.stride())[0]);
    } else {
      y = (first + static_cast<std::ptrdiff_t>(i))->forward(y);  // [B, C_i, H_i, W_i]
    }
  }
  return y;
}

std::vector<std::shared_ptr<torch::nn::Module>> VggImpl::block_modules(size_t index) const {
  std::vector<std::shared_ptr<torch::nn::Module>> modules;
  for (size_t i = stages_[index].first; i < stages_[index].second; ++i) modules.push_back(features_->ptr(i));
  return modules;
}

std::array<int64_t, 2> VggImpl::native_grid_size(int64_t height, int64_t width) const {
  for (size_t i = 0; i + 1 < stages_.size(); ++i) {  // a 2x2/2 pool after each stage but the last
    height /= 2;
    width /= 2;
  }
  return {height, width};
}

}  // namespace saccade
