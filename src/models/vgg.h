// VGG-16/19 (Simonyan & Zisserman 2015) as an encoder, built natively with torchvision's
// parameter names (`features.<i>.{weight,bias}` with torchvision's layer indices), cut before the
// last max pool: after conv5_3 (VGG-16) or conv5_4 (VGG-19) and its ReLU, the layer the paper
// attends over: 14x14x512 for a 224 px input. The classifier (fc6..fc8) is dropped.
// Blocks for fine-tuning: the five conv stages (conv1_x .. conv5_x, each with its trailing pool).
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <utility>

#include "models/conv_batchnorm.h"
#include "models/encoder.h"

namespace saccade {

class VggImpl : public EncoderImpl {
 public:
  // depth: 16 or 19 (std::invalid_argument otherwise). Uses options.name and .grid.
  VggImpl(int64_t depth, const EncoderOptions& options);
  int64_t feature_dim() const override { return 512; }

 protected:
  size_t block_count() const override { return stages_.size(); }
  torch::Tensor run_block(size_t index, const torch::Tensor& x) override;
  std::vector<std::shared_ptr<torch::nn::Module>> block_modules(size_t index) const override;
  std::array<int64_t, 2> native_grid_size(int64_t height, int64_t width) const override;
  bool runs_onednn_tensors() const override { return true; }

 private:
  torch::nn::Sequential features_{nullptr};
  std::vector<ConvBatchNorm> convs_;               // per layer of features_: its conv, or empty
  std::vector<std::pair<size_t, size_t>> stages_;  // [begin, end) layer indices into features_
};

}  // namespace saccade
