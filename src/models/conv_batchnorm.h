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
// A bf16 oneDNN x meets a bf16 copy of the folded weight (the bias stays float32; oneDNN sums in
// float32 and rounds the output to bf16): relative error ~1e-2 per network, at up to twice the
// speed on CPUs with AVX-512 BF16 (kernels/kernel_isa.h), the only ones EncoderImpl sends bf16.
//
// The prepared weights are made at the first oneDNN call of each precision and remade when a
// source tensor changes (another storage, or an in-place update such as loading a state_dict or
// an optimizer step), so they are never stale; parameters made in inference mode have no version
// counter, and only a change of storage is seen in them. The unit pads by
// dilation * (kernel - 1) / 2, which keeps the size at stride 1, as every ResNet, VGG and
// small_cnn convolution does; the torchvision agreement tests and small_cnn's test hold it to the
// modules.
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

// max_pool2d over a square kernel for dense or oneDNN `x`, in x's layout. LibTorch >= 2.x refuses
// torch::max_pool2d (a composite op) on oneDNN tensors outside inference mode, so those go to
// oneDNN's own kernel.
at::Tensor max_pool2d_any_layout(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding = 0);

// a + b for dense or oneDNN tensors of one layout, in that layout. With LibTorch >= 2 the sum of
// oneDNN tensors is taken densely: Debian 13's LibTorch 2.6 (oneDNN 3.6) dies of an integer
// division by zero inside oneDNN's sum, as Python's torch does on `a + b` of two to_mkldnn() tensors.
at::Tensor add_any_layout(const at::Tensor& a, const at::Tensor& b);

class ConvBatchNorm {
 public:
  ConvBatchNorm() = default;
  explicit ConvBatchNorm(torch::nn::Conv2d conv, torch::nn::BatchNorm2d batchnorm = nullptr);

  // [B, C, H, W] -> [B, C', H', W'], in x's layout (dense or oneDNN). A oneDNN x must not need
  // gradients, and the BatchNorm must be in eval mode (its running statistics are folded).
  at::Tensor operator()(const at::Tensor& x);

  bool empty() const { return conv_.is_empty(); }

 private:
  struct Prepared {
    at::Tensor weight, bias;  // oneDNN tensors, folded and reordered; empty until first needed
  };

  std::vector<at::Tensor> sources() const;  // the tensors the prepared weights are made from
  // Each source's data pointer and version: the prepared weights are current while these are.
  std::vector<std::pair<const void*, int64_t>> identities() const;
  // The folded weight, reordered for x of `dtype` (float or bf16), and the float32 bias.
  Prepared prepare(at::ScalarType dtype) const;

  torch::nn::Conv2d conv_{nullptr};
  torch::nn::BatchNorm2d batchnorm_{nullptr};
  Prepared fp32_, bf16_;                                  // for float and bf16 x
  std::vector<std::pair<const void*, int64_t>> made_of_;  // identities() when prepared
};

}  // namespace saccade
