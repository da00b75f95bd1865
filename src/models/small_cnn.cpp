// small_cnn: conv stages with max pooling between them.
#include "models/small_cnn.h"

#include <torch/nn/init.h>

#include <stdexcept>
#include <string>

namespace saccade {

size_t small_cnn_pool_count(const EncoderOptions& options) {
  // 32 keeps every dilation, 2^(stages - 1) at the most, well inside int64_t.
  constexpr size_t kMostStages = 32;
  const size_t stages = options.channels.size();
  if (stages == 0) throw std::invalid_argument("encoder.channels must list at least one stage");
  if (stages > kMostStages) {
    throw std::invalid_argument(
        "encoder.channels lists " + std::to_string(stages) + " stages, more than " +
        std::to_string(kMostStages));
  }
  for (const int64_t channels : options.channels) {
    if (channels <= 0) {
      throw std::invalid_argument("encoder.channels entries must be > 0, got " + std::to_string(channels));
    }
  }
  if (!options.output_stride) return stages - 1;
  const int64_t stride = *options.output_stride;
  const int64_t largest = int64_t{1} << (stages - 1);
  if (stride < 1 || stride > largest || (stride & (stride - 1)) != 0) {
    throw std::invalid_argument(
        "encoder.output_stride must be a power of two from 1 to " + std::to_string(largest) + " for " +
        std::to_string(stages) + " stages, got " + std::to_string(stride));
  }
  size_t pools = 0;
  while ((int64_t{1} << pools) < stride) ++pools;
  return pools;
}

SmallCnnStageImpl::SmallCnnStageImpl(int64_t in_channels, int64_t out_channels, int64_t dilation) {
  conv_ = register_module(
      "conv",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(in_channels, out_channels, 3).padding(dilation).dilation(dilation)));
  bn_ = register_module("bn", torch::nn::BatchNorm2d(out_channels));
  torch::nn::init::kaiming_normal_(conv_->weight, 0.0, torch::kFanOut, torch::kReLU);
  torch::nn::init::zeros_(conv_->bias);
  unit_ = ConvBatchNorm(conv_, bn_);
}

torch::Tensor SmallCnnStageImpl::forward(const torch::Tensor& x) {
  return torch::relu(unit_(x));  // [B, C_out, H, W], x's layout
}

SmallCnnImpl::SmallCnnImpl(const EncoderOptions& options)
    : EncoderImpl(options, /*freeze_batchnorm=*/false),
      channels_(options.channels),
      pools_(small_cnn_pool_count(options)) {
  stages_ = register_module("stages", torch::nn::ModuleList());
  int64_t in_channels = 3;
  for (size_t i = 0; i < channels_.size(); ++i) {
    // Each pool left out before this stage doubles its dilation.
    const int64_t dilation = int64_t{1} << (i > pools_ ? i - pools_ : 0);
    stages_->push_back(SmallCnnStage(in_channels, channels_[i], dilation));
    in_channels = channels_[i];
  }
}

torch::Tensor SmallCnnImpl::run_block(size_t index, const torch::Tensor& x) {
  torch::Tensor y = stages_[index]->as<SmallCnnStageImpl>()->forward(x);  // [B, C_i, H_i, W_i]
  if (index < pools_) y = max_pool2d_any_layout(y, 2, 2);                 // [B, C_i, H_i/2, W_i/2]
  return y;
}

std::vector<std::shared_ptr<torch::nn::Module>> SmallCnnImpl::block_modules(size_t index) const {
  return {stages_->ptr(index)};
}

std::array<int64_t, 2> SmallCnnImpl::native_grid_size(int64_t height, int64_t width) const {
  for (size_t i = 0; i < pools_; ++i) {
    height /= 2;
    width /= 2;
  }
  return {height, width};
}

}  // namespace saccade
