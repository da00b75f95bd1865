// small_cnn: a compact CNN for the synthetic shapes world, trained from scratch.
//
// Stages of conv3x3 -> BatchNorm -> ReLU with the channel counts of `EncoderOptions::channels`;
// a 2x2 max pool follows every stage but the last. With the default four stages a 64 px image
// gives an 8x8 grid of D = 128 (about 0.05 GFLOP per image, quick on 2 CPU cores). A smaller
// `output_stride` leaves out the last pools and dilates the later convolutions instead (as
// DeepLab does), so the finer grid's cells see nearly as far as the coarse grid's (34 px against
// 38 at stride 4); the weights keep their shapes and names. Unlike the pretrained networks, its BatchNorm
// follows train()/eval(). Parameter names: stages.<i>.conv.{weight,bias},
// stages.<i>.bn.{weight,bias,running_*}.
#pragma once

#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/conv.h>

#include "models/conv_batchnorm.h"
#include "models/encoder.h"

namespace saccade {

// How many 2x2 max pools `options` asks of small_cnn: one after every stage but the last, or
// log2(output_stride). Throws std::invalid_argument, naming the key and value, for no stages,
// more than 32, a channel count <= 0, or an output_stride that is not 2^k with k < stages.
size_t small_cnn_pool_count(const EncoderOptions& options);

// One stage: conv3x3 (dilation d, padding d: the size is kept) -> BatchNorm -> ReLU, on dense
// or, in eval mode without autograd, oneDNN tensors (models/conv_batchnorm.h).
class SmallCnnStageImpl : public torch::nn::Module {
 public:
  SmallCnnStageImpl(int64_t in_channels, int64_t out_channels, int64_t dilation);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d bn_{nullptr};
  ConvBatchNorm unit_;  // conv_ and bn_
};
TORCH_MODULE(SmallCnnStage);

class SmallCnnImpl : public EncoderImpl {
 public:
  // Uses options.channels, options.output_stride and options.grid.
  explicit SmallCnnImpl(const EncoderOptions& options);
  int64_t feature_dim() const override { return channels_.back(); }

 protected:
  size_t block_count() const override { return channels_.size(); }
  torch::Tensor run_block(size_t index, const torch::Tensor& x) override;
  std::vector<std::shared_ptr<torch::nn::Module>> block_modules(size_t index) const override;
  std::array<int64_t, 2> native_grid_size(int64_t height, int64_t width) const override;
  bool runs_onednn_tensors() const override { return true; }

 private:
  std::vector<int64_t> channels_;
  size_t pools_ = 0;  // 2x2 max pools, after stages 0 .. pools_ - 1
  torch::nn::ModuleList stages_{nullptr};
};

}  // namespace saccade
