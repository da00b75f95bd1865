// torchscript encoder: torch::jit::load, a probe run, and a checked forward.
#include "models/torchscript_encoder.h"

#include <torch/csrc/jit/serialization/import.h>
#include <torch/utils.h>

#include <stdexcept>

#include "base/text.h"

namespace saccade {

TorchScriptEncoderImpl::TorchScriptEncoderImpl(const EncoderOptions& options)
    : EncoderImpl(options, /*freeze_batchnorm=*/true), path_(options.path) {
  try {
    module_ = torch::jit::load(path_, torch::kCPU);
  } catch (const c10::Error& error) {
    throw std::runtime_error(
        "Could not load TorchScript encoder '" + path_ +
        "' (encoder.path): " + first_line(error.what_without_backtrace()));
  }
  module_.eval();
  const auto probe = torch::zeros({1, 3, options.probe_size[0], options.probe_size[1]});  // [1, 3, H, W]
  const torch::Tensor grid = run_module(probe);                                           // [1, D, H', W']
  dim_ = grid.size(1);
  grid_sizes_[{options.probe_size[0], options.probe_size[1]}] = {grid.size(2), grid.size(3)};
}

torch::Tensor TorchScriptEncoderImpl::run_module(const torch::Tensor& images) const {
  torch::NoGradGuard no_grad;
  c10::IValue output;
  try {
    output = module_.forward({images});
  } catch (const c10::Error& error) {
    throw std::invalid_argument(
        "TorchScript encoder '" + path_ + "' failed on input [" + std::to_string(images.size(0)) + ", 3, " +
        std::to_string(images.size(2)) + ", " + std::to_string(images.size(3)) +
        "]: " + first_line(error.what_without_backtrace()));
  }
  if (!output.isTensor() || output.toTensor().dim() != 4 || output.toTensor().size(0) != images.size(0)) {
    const std::string got = output.isTensor()
                                ? "a tensor of " + std::to_string(output.toTensor().dim()) + " dims"
                                : std::string("a ") + output.tagKind();
    throw std::invalid_argument(
        "TorchScript encoder '" + path_ + "' must return a grid [B, D, H', W'], but returned " + got);
  }
  return output.toTensor();  // [B, D, H', W']
}

torch::Tensor TorchScriptEncoderImpl::run_block(size_t index, const torch::Tensor& x) {
  return run_module(x);  // [B, D, H', W']
}

void TorchScriptEncoderImpl::to(torch::Device device, bool non_blocking) {
  EncoderImpl::to(device, non_blocking);
  module_.to(device, non_blocking);
  device_ = device;
}

std::array<int64_t, 2> TorchScriptEncoderImpl::native_grid_size(int64_t height, int64_t width) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = grid_sizes_.find({height, width});
  if (it != grid_sizes_.end()) return it->second;
  const torch::Tensor grid = run_module(torch::zeros({1, 3, height, width}, device_));  // [1, D, H', W']
  return grid_sizes_[{height, width}] = {grid.size(2), grid.size(3)};
}

}  // namespace saccade
