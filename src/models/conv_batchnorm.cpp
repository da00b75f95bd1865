// ConvBatchNorm: the modules on dense tensors, one prepared oneDNN convolution on oneDNN tensors.
#include "models/conv_batchnorm.h"

#include <ATen/Context.h>
#include <ATen/ops/max_pool2d.h>
#include <ATen/ops/mkldnn_convolution.h>
#include <ATen/ops/mkldnn_max_pool2d.h>
#include <ATen/ops/mkldnn_reorder_conv2d_weight.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>

#include <stdexcept>
#include <vector>

#include "device/torch_compat.h"

namespace saccade {
namespace {

// dilation * (kernel - 1) / 2 on each side: the size is kept at stride 1.
std::vector<int64_t> centred_padding(const torch::nn::detail::ConvNdOptions<2>& options) {
  const auto& kernel = *options.kernel_size();
  const auto& dilation = *options.dilation();
  return {dilation[0] * ((kernel[0] - 1) / 2), dilation[1] * ((kernel[1] - 1) / 2)};
}

}  // namespace

bool onednn_inference_available(const at::Tensor& x) {
  return x.device().is_cpu() && x.scalar_type() == at::kFloat && at::hasMKLDNN() &&
         !compat::autocast_enabled(c10::DeviceType::CPU);
}

at::Tensor max_pool2d_any_layout(const at::Tensor& x, int64_t kernel, int64_t stride, int64_t padding) {
  if (x.is_mkldnn()) return at::mkldnn_max_pool2d(x, {kernel, kernel}, {stride, stride}, {padding, padding});
  return at::max_pool2d(x, {kernel, kernel}, {stride, stride}, {padding, padding});
}

at::Tensor add_any_layout(const at::Tensor& a, const at::Tensor& b) {
#if SACCADE_TORCH_AT_LEAST(2, 0)
  if (a.is_mkldnn()) return (a.to_dense() + b.to_dense()).to_mkldnn(a.scalar_type());
#endif
  return a + b;
}

ConvBatchNorm::ConvBatchNorm(torch::nn::Conv2d conv, torch::nn::BatchNorm2d batchnorm)
    : conv_(std::move(conv)), batchnorm_(std::move(batchnorm)) {}

at::Tensor ConvBatchNorm::operator()(const at::Tensor& x) {
  if (!x.is_mkldnn()) {
    const at::Tensor y = conv_(x);                     // [B, C', H', W']
    return batchnorm_.is_empty() ? y : batchnorm_(y);  // [B, C', H', W']
  }
  if (!batchnorm_.is_empty() && batchnorm_->is_training()) {
    throw std::logic_error("ConvBatchNorm: oneDNN tensors need the BatchNorm in eval mode");
  }
  if (const auto identity = identities(); identity != made_of_) {
    fp32_ = bf16_ = Prepared{};
    made_of_ = identity;
  }
  Prepared& prepared = x.scalar_type() == at::kBFloat16 ? bf16_ : fp32_;
  if (!prepared.weight.defined()) prepared = prepare(x.scalar_type());
  const auto& options = conv_->options;
  return at::mkldnn_convolution(
      x, prepared.weight, prepared.bias, centred_padding(options), *options.stride(), *options.dilation(),
      options.groups());  // oneDNN [B, C', H', W'], x's dtype
}

std::vector<at::Tensor> ConvBatchNorm::sources() const {
  std::vector<at::Tensor> tensors = {conv_->weight};
  if (conv_->bias.defined()) tensors.push_back(conv_->bias);
  if (!batchnorm_.is_empty()) {
    for (const at::Tensor* t :
         {&batchnorm_->weight, &batchnorm_->bias, &batchnorm_->running_mean, &batchnorm_->running_var}) {
      if (t->defined()) tensors.push_back(*t);
    }
  }
  return tensors;
}

std::vector<std::pair<const void*, int64_t>> ConvBatchNorm::identities() const {
  std::vector<std::pair<const void*, int64_t>> result;
  // Tensors made in inference mode count no versions: their storage alone identifies them.
  for (const at::Tensor& t : sources())
    result.emplace_back(t.data_ptr(), t.is_inference() ? -1 : t._version());
  return result;
}

ConvBatchNorm::Prepared ConvBatchNorm::prepare(at::ScalarType dtype) const {
  // Normal tensors, so that the prepared weights serve later calls outside inference mode too.
  c10::InferenceMode normal_tensors(/*enabled=*/false);
  c10::NoGradGuard no_grad;
  const auto& options = conv_->options;
  at::Tensor weight = conv_->weight.detach();  // [C', C / groups, kh, kw]
  at::Tensor bias =
      conv_->bias.defined() ? conv_->bias.detach() : at::zeros({weight.size(0)}, weight.options());
  if (!batchnorm_.is_empty()) {
    if (!batchnorm_->running_var.defined()) {
      throw std::logic_error("ConvBatchNorm: oneDNN tensors need a BatchNorm with running statistics");
    }
    const double eps = batchnorm_->options.eps();
    at::Tensor scale = at::rsqrt(batchnorm_->running_var.detach() + eps);  // [C']
    if (batchnorm_->options.affine()) scale = scale * batchnorm_->weight.detach();
    bias = (bias - batchnorm_->running_mean.detach()) * scale;
    if (batchnorm_->options.affine()) bias = bias + batchnorm_->bias.detach();
    weight = weight * scale.view({-1, 1, 1, 1});
  }
  return {
      at::mkldnn_reorder_conv2d_weight(
          weight.contiguous().to_mkldnn(dtype), centred_padding(options), *options.stride(),
          *options.dilation(), options.groups()),
      bias.contiguous().to_mkldnn()};
}

}  // namespace saccade
