// torchscript: any TorchScript module (torch.jit.save) as an encoder.
//
//   saccade train encoder=torchscript encoder.path=my_backbone.pt
//
// The module's forward must take the normalized images [B, 3, H, W] and return a grid
// [B, D, H', W']. It is loaded once, kept in eval mode and run under no-grad (TorchScript
// encoders are frozen); a zero image of `probe_size` is run at build time to learn D and to
// fail early on a module of the wrong kind. Grid sizes for other input sizes are probed once
// each and cached. The module moves with the encoder (to(device)).
#pragma once

#include <torch/csrc/jit/api/module.h>

#include <map>
#include <mutex>
#include <utility>

#include "models/encoder.h"

namespace saccade {

class TorchScriptEncoderImpl : public EncoderImpl {
 public:
  // Uses options.path, .probe_size, .name and .grid. Throws std::runtime_error when the file
  // cannot be loaded, std::invalid_argument when the module does not return a 4-D grid.
  explicit TorchScriptEncoderImpl(const EncoderOptions& options);
  int64_t feature_dim() const override { return dim_; }
  // The TorchScript module is no registered submodule: it is moved here, with the encoder.
  using EncoderImpl::to;
  void to(torch::Device device, bool non_blocking = false) override;

 protected:
  size_t block_count() const override { return 1; }
  torch::Tensor run_block(size_t index, const torch::Tensor& x) override;
  std::vector<std::shared_ptr<torch::nn::Module>> block_modules(size_t index) const override { return {}; }
  std::array<int64_t, 2> native_grid_size(int64_t height, int64_t width) const override;

 private:
  // Runs the module on `images` and checks it returned [B, D, H', W'].
  torch::Tensor run_module(const torch::Tensor& images) const;

  std::string path_;
  mutable torch::jit::Module module_;  // jit::Module::forward is not const
  int64_t dim_ = 0;
  torch::Device device_ = torch::kCPU;  // where the module is, and so where probe images go
  mutable std::mutex mutex_;
  mutable std::map<std::pair<int64_t, int64_t>, std::array<int64_t, 2>> grid_sizes_;
};

}  // namespace saccade
