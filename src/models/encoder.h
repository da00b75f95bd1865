// Encoders: CNNs that turn images into the annotation grid the decoder attends over.
//
//   Encoder encoder = build_encoder(encoder_options_from(cfg));  // cfg's `encoder.*` keys
//   torch::Tensor a = encoder(images);                            // [B, 3, H, W] -> [B, L, D]
//
// Shape legend: B batch, L = H' * W' grid locations, D annotation dim (channels of the grid).
// Images are float, already resized and normalized by data/ (ImageNet mean/std for the
// pretrained networks). The grid is the network's last kept feature map, optionally
// adaptive-average-pooled to `grid`, with `position` applied (models/grid_position.h), flattened
// row-major (l = y * W' + x).
//
// Encoders by name (the registry below; configs/encoder/<name>.yaml holds each one's keys):
//   small_cnn          a compact CNN for the shapes world, trained from scratch
//   resnet18 ... 152   torchvision's ResNet cut after layer4 (7x7x512|2048 at 224 px)
//   vgg16, vgg19       torchvision's VGG cut after conv5_3 / conv5_4 + ReLU, before the last
//                      pool (14x14x512 at 224 px, the paper's grid)
//   torchscript        any TorchScript module mapping [B, 3, H, W] -> [B, D, H', W']
//
// Fine-tuning: a network is a chain of blocks (ResNet: stem, layer1..layer4; VGG: its five conv
// stages; small_cnn: its stages). `trainable_blocks = N` trains the last N; the blocks before
// run under no-grad with requires_grad off. N = 0 freezes everything, N = -1 trains everything.
// Pretrained networks keep BatchNorm in eval mode whatever train() says (running statistics
// and affine terms of a frozen or fine-tuned ImageNet net stay as loaded).
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/types.h>

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/image_pipeline.h"

#include "base/registry.h"
#include "config/config.h"
#include "models/grid_position.h"
#include "models/grid_refiner.h"

namespace saccade {

class ArchitectureKeys;

struct EncoderOptions {
  // Registry name: small_cnn, resnet18, resnet34, resnet50, resnet101, resnet152, vgg16, vgg19,
  // torchscript, or any name added to encoder_registry().
  std::string name = "small_cnn";
  // A safetensors file of weights in torchvision/timm naming; nullopt = random init
  // (torchvision's init: Kaiming-normal convolutions, BatchNorm 1/0). Keys of the parts an
  // encoder cuts off (fc.*, classifier.*, head.*, pre_logits.*) are ignored.
  std::optional<std::string> weights;
  // How many of the last blocks train: 0 = frozen (forward under no-grad), -1 = all.
  int64_t trainable_blocks = -1;
  // Adaptive average pooling of the output grid to [H', W']; nullopt = the native grid.
  std::optional<std::array<int64_t, 2>> grid;
  // Position added to the grid: none, coords (x, y channels appended) or sinusoidal (added).
  GridPosition position = GridPosition::none;
  // small_cnn: output channels of each conv stage, the last one's count is D. By default a 2x2
  // max pool follows every stage but the last: four stages turn 64 px into an 8x8 grid.
  std::vector<int64_t> channels = {32, 64, 128, 128};
  // small_cnn: pixels per grid cell, a power of two up to 2^(stages - 1); nullopt = every pool.
  // Each pool left out doubles the dilation of the stages after it, so a finer grid's cells see
  // nearly as far as with every pool (output stride 4: 64 px -> 16x16 cells seeing 34 px, not 38).
  std::optional<int64_t> output_stride;
  // torchscript: the module file (torch.jit.save). Its forward gets the normalized images.
  std::string path;
  // torchscript: the [H, W] of a zero image run once at build time to learn D and check the
  // module's output is a [B, D, H', W'] grid.
  std::array<int64_t, 2> probe_size = {224, 224};
  // Self-attention over the annotations before the decoder reads them (encoder.refiner.*). Not
  // part of the encoder module: the Captioner runs it, after a feature cache too.
  RefinerOptions refiner;
};

// Reads `encoder.*`: name, weights, trainable_blocks, grid, position, refiner, plus channels and
// output_stride (small_cnn) or path and probe_size (torchscript). Throws ConfigError for a missing or
// ill-typed key. Records the keys that shape the model in `architecture`, when given
// (models/architecture_keys.h).
EncoderOptions encoder_options_from(const Config& cfg, ArchitectureKeys* architecture = nullptr);

// What an encoder's annotations depend on, recorded with a feature cache and compared when one is
// used: the encoder's name, grid and channels, a digest of its weights (or TorchScript module)
// file, and the image settings ("encoder.weights_digest" -> "1f0c...", "dataset.image.crop" ->
// "224", ...). Throws std::runtime_error when the weights file cannot be read.
std::map<std::string, std::string> describe_annotations(
    const EncoderOptions& encoder, const ImageOptions& image);

// Throws std::invalid_argument, one sentence per rule: a known name, trainable_blocks >= -1,
// grid entries > 0, small_cnn's rules (small_cnn_pool_count), torchscript with a path, no weights
// and trainable_blocks 0.
void validate(const EncoderOptions& options);

// The base of every encoder. Subclasses describe themselves as a chain of blocks; the base runs
// the frozen prefix under no-grad, pools to the configured grid and flattens.
class EncoderImpl : public torch::nn::Module {
 public:
  ~EncoderImpl() override = default;

  // Normalized images [B, 3, H, W] -> annotations [B, L, D] (contiguous). Throws
  // std::invalid_argument for another input shape or an image too small for the network.
  torch::Tensor forward(const torch::Tensor& images);

  // Normalized images [B, 3, H, W] -> the grid [B, D, H', W'] (what `forward` flattens).
  torch::Tensor forward_grid(const torch::Tensor& images);

  // Channels of the network's last feature map.
  virtual int64_t feature_dim() const = 0;
  // D: channels of the annotation grid, position channels included.
  int64_t annotation_dim() const { return feature_dim() + added_channels(position_); }

  // [H', W'] of the grid for an input of height x width: `grid` when set, else the native size.
  std::array<int64_t, 2> grid_size(int64_t height, int64_t width) const;

  // The registry name this encoder was built under ("resnet50").
  const std::string& name() const { return name_; }

  // Number of blocks in the chain, and how many of the last ones train (0 .. num_blocks()).
  int64_t num_blocks() const { return static_cast<int64_t>(block_count()); }
  int64_t trainable_blocks() const { return trainable_blocks_; }

  // Trains the last `count` blocks (-1 = all, 0 = none): sets requires_grad on their parameters
  // and clears it on the others. Throws std::invalid_argument outside -1 .. num_blocks().
  void set_trainable_blocks(int64_t count);

  // Sets training mode, then puts frozen blocks (and, for pretrained networks, every BatchNorm)
  // back into eval mode.
  void train(bool on = true) override;

  // Whether blocks that run without autograd in eval mode (the frozen prefix; every block in
  // eval mode under no-grad) go through oneDNN tensors with prepared, BatchNorm-folded weights
  // (models/conv_batchnorm.h) when the encoder and the images allow it. On by default; off, they
  // run through LibTorch's modules as the others do (the encoder bench compares the two). Inside
  // an InferencePrecision with bf16 weights (kernels/inference_precision.h), on CPUs with AVX-512
  // BF16, those blocks run on bf16 activations and weights (oneDNN sums in float32); the grid
  // comes back in float32.
  void set_onednn_inference(bool on) { onednn_inference_ = on; }
  // How forward_grid would run `images`' blocks now: "oneDNN, prepared float32 weights: N of M
  // blocks" (or bf16) or "LibTorch modules".
  std::string inference_path(const torch::Tensor& images) const;

 protected:
  // Takes the name, grid and position of `options`.
  EncoderImpl(const EncoderOptions& options, bool freeze_batchnorm);

  // The chain: block `index` maps the previous block's output to its own.
  virtual size_t block_count() const = 0;
  virtual torch::Tensor run_block(size_t index, const torch::Tensor& x) = 0;
  // Submodules holding block `index`'s parameters (for freezing and eval mode).
  virtual std::vector<std::shared_ptr<torch::nn::Module>> block_modules(size_t index) const = 0;
  // The grid size before pooling for a height x width input ({0, 0} when too small).
  virtual std::array<int64_t, 2> native_grid_size(int64_t height, int64_t width) const = 0;
  // Whether run_block also takes oneDNN tensors (and returns them) when no gradient is needed.
  virtual bool runs_onednn_tensors() const { return false; }

 private:
  // How many leading blocks of `images` forward_grid runs on oneDNN tensors (0 .. num_blocks()).
  size_t onednn_blocks(const torch::Tensor& images) const;
  // The first `blocks` blocks over oneDNN tensors, a few images at a time.
  torch::Tensor run_onednn_blocks(const torch::Tensor& images, size_t blocks);

  std::string name_;
  std::optional<std::array<int64_t, 2>> grid_;
  GridPosition position_;
  bool freeze_batchnorm_;
  int64_t trainable_blocks_ = 0;  // 0 .. num_blocks()
  bool onednn_inference_ = true;
};

TORCH_MODULE(Encoder);

// Builds an encoder from its parts, as the registry entries do.
using EncoderBuilder = std::function<std::shared_ptr<EncoderImpl>(const EncoderOptions&)>;

// The encoders by name: small_cnn, resnet18..152, vgg16, vgg19, torchscript, and any added.
Registry<EncoderBuilder>& encoder_registry();

// Validates `options`, builds the named encoder, loads `weights` (ignoring cut-off parts' keys),
// applies trainable_blocks and leaves it in training mode (BatchNorm per the rules above).
// Throws std::invalid_argument for an unknown name (listing the known ones) or weights that do
// not fit, std::runtime_error for unreadable files.
Encoder build_encoder(const EncoderOptions& options);

}  // namespace saccade
