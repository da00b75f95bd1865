// A convolution and the eval-mode BatchNorm after it (or a convolution alone), runnable two ways:
//
//   ConvBatchNorm unit(conv, bn);
//   unit(x)            dense x: the modules themselves (autograd, training-mode statistics)
//   unit(x_onednn)     x.is_mkldnn(): one oneDNN convolution from prepared weights
//
// The prepared weights fold the BatchNorm into the convolution (w * g / sqrt(v + eps), and
// (b - m) * g / sqrt(v + eps) + beta as the bias) and are reordered once into oneDNN's blocked
// layout. LibTorch's convolution reorders the weight, and the activations from and to NCHW, at
// every call, and runs the BatchNorm as a pass of its own; on oneDNN tensors a chain of blocks
// stays in oneDNN's layout from the first convolution to the last. Results differ from the
// modules' by rounding (relative ~1e-6).
//
// The prepared weights are made at the first oneDNN call and remade when a source tensor changes
// (another storage, or an in-place update such as loading a state_dict or an optimizer step), so
// they are never stale; parameters made in inference mode have no version counter, and only a
// change of storage is seen in them. Every ResNet and VGG convolution pads by (kernel - 1) / 2, which the
// unit assumes; the torchvision agreement tests hold it to the modules.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/nn/modules/conv.h>

#include <cstdint>
#include <utility>
#include <vector>

namespace saccade {

// Whether float images `x` can run through oneDNN tensors: on the CPU, float32, LibTorch built
// with oneDNN, CPU autocast off.
bool onednn_inference_available(const at::Tensor& x);

class ConvBatchNorm {
 public:
  ConvBatchNorm() = default;
  explicit ConvBatchNorm(torch::nn::Conv2d conv, torch::nn::BatchNorm2d batchnorm = nullptr);

  // [B, C, H, W] -> [B, C', H', W'], in x's layout (dense or oneDNN). A oneDNN x must not need
  // gradients, and the BatchNorm must be in eval mode (its running statistics are folded).
  at::Tensor operator()(const at::Tensor& x);

  bool empty() const { return conv_.is_empty(); }

 private:
  std::vector<at::Tensor> sources() const;  // the tensors the prepared weights are made from
  // Each source's data pointer and version: the prepared weights are current while these are.
  std::vector<std::pair<const void*, int64_t>> identities() const;
  void prepare();

  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d batchnorm_{nullptr};
  at::Tensor weight_, bias_;                              // oneDNN tensors, folded and reordered
  std::vector<std::pair<const void*, int64_t>> made_of_;  // identities() when prepared
};

}  // namespace saccade
