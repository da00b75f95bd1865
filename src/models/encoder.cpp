// The encoder base (frozen prefix under no-grad, pooling, flattening), its options and registry.
#include "models/encoder.h"

#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/batchnorm.h>
#include <torch/utils.h>

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "base/text.h"
#include "io/run_folder.h"
#include "io/safetensors.h"
#include "kernels/inference_precision.h"
#include "kernels/kernel_isa.h"
#include "models/architecture_keys.h"
#include "models/conv_batchnorm.h"
#include "models/resnet.h"
#include "models/small_cnn.h"
#include "models/torchscript_encoder.h"
#include "models/vgg.h"
#include "models/weights.h"

namespace saccade {
namespace {

// The oneDNN blocks' activations: bf16 inside an InferencePrecision with bf16 weights on CPUs with
// AVX-512 BF16, where oneDNN's bf16 convolutions run natively (elsewhere they are emulated, or
// refused, and slower than float32's); float32 otherwise.
at::ScalarType onednn_activations() {
  return InferencePrecision::bf16_weights() && has_avx512_bf16() ? at::kBFloat16 : at::kFloat;
}

}  // namespace

EncoderOptions encoder_options_from(const Config& cfg, ArchitectureKeys* architecture) {
  const auto shaping = [architecture](const char* key) {
    return ArchitectureKeys::record(architecture, key);
  };
  EncoderOptions options;
  options.name = cfg.get<std::string>(shaping("encoder.name"));
  // Not architecture keys: a checkpoint's weights replace the initial ones, and which blocks
  // train does not change what a trained model computes.
  options.weights = cfg.get_optional<std::string>("encoder.weights");
  options.trainable_blocks = cfg.get<int64_t>("encoder.trainable_blocks");
  if (const auto grid = cfg.get_optional<std::vector<int64_t>>(shaping("encoder.grid"))) {
    if (grid->size() != 2) {
      throw ConfigError(
          "encoder.grid must be [H, W] or null, got a list of " + std::to_string(grid->size()) + " values");
    }
    options.grid = std::array<int64_t, 2>{(*grid)[0], (*grid)[1]};
  }
  options.position = cfg.get_parsed(shaping("encoder.position"), parse_grid_position);
  options.refiner = refiner_options_from(cfg, architecture);
  if (options.name == "small_cnn") {
    options.channels = cfg.get<std::vector<int64_t>>(shaping("encoder.channels"));
    // Absent from the configs of runs saved before the option existed.
    if (cfg.has("encoder.output_stride"))
      options.output_stride = cfg.get_optional<int64_t>(shaping("encoder.output_stride"));
  }
  if (options.name == "torchscript") {
    options.path = cfg.get<std::string>("encoder.path");
    const auto probe = cfg.get<std::vector<int64_t>>("encoder.probe_size");
    if (probe.size() != 2) {
      throw ConfigError(
          "encoder.probe_size must be [H, W], got a list of " + std::to_string(probe.size()) + " values");
    }
    options.probe_size = {probe[0], probe[1]};
  }
  return options;
}

std::map<std::string, std::string> describe_annotations(
    const EncoderOptions& encoder, const ImageOptions& image) {
  auto list = [](const auto& values) {
    std::ostringstream text;
    text << "[";
    for (size_t i = 0; i < values.size(); ++i) text << (i ? ", " : "") << values[i];
    return text.str() + "]";
  };
  std::string weights = "none (initialized from the seed)";
  if (encoder.name == "torchscript") {
    weights = "module " + file_digest(encoder.path);
  } else if (encoder.weights) {
    weights = file_digest(*encoder.weights);
  }
  std::map<std::string, std::string> described = {
      {"encoder.name", encoder.name},
      {"encoder.weights_digest", weights},
      {"encoder.grid", encoder.grid ? list(*encoder.grid) : "null"},
      {"encoder.channels", encoder.name == "small_cnn" ? list(encoder.channels) : "n/a"},
      {"dataset.image.resize", std::to_string(image.resize)},
      {"dataset.image.crop", std::to_string(image.crop)},
      {"dataset.image.keep_aspect", image.keep_aspect ? "true" : "false"},
      {"dataset.image.mean", list(image.mean)},
      {"dataset.image.std", list(image.std)},
  };
  // Only when set, so caches made before the option existed still match.
  if (encoder.position != GridPosition::none) described["encoder.position"] = to_string(encoder.position);
  // Only when it changes the network, so a stride set to the default finds the same caches.
  if (encoder.name == "small_cnn" && encoder.output_stride &&
      small_cnn_pool_count(encoder) + 1 != encoder.channels.size()) {
    described["encoder.output_stride"] = std::to_string(*encoder.output_stride);
  }
  return described;
}

void validate(const EncoderOptions& options) {
  encoder_registry().check(options.name, "encoder.name");
  if (options.weights.has_value() && options.weights->empty()) {
    throw std::invalid_argument("encoder.weights is an empty string; use null for random initialization");
  }
  if (options.trainable_blocks < -1) {
    throw std::invalid_argument(
        "encoder.trainable_blocks must be -1 (all), 0 (frozen) or a block count, got " +
        std::to_string(options.trainable_blocks));
  }
  if (options.grid.has_value() && ((*options.grid)[0] <= 0 || (*options.grid)[1] <= 0)) {
    throw std::invalid_argument(
        "encoder.grid must hold two sizes > 0, got [" + std::to_string((*options.grid)[0]) + ", " +
        std::to_string((*options.grid)[1]) + "]");
  }
  if (options.name == "small_cnn") small_cnn_pool_count(options);  // throws for a broken rule
  if (options.name == "torchscript") {
    if (options.path.empty())
      throw std::invalid_argument("encoder.path must name a TorchScript file for encoder=torchscript");
    if (options.weights.has_value()) {
      throw std::invalid_argument(
          "encoder.weights must be null for encoder=torchscript: the module carries its own weights");
    }
    if (options.trainable_blocks != 0) {
      throw std::invalid_argument(
          "encoder.trainable_blocks must be 0 for encoder=torchscript (TorchScript encoders run frozen), "
          "got " +
          std::to_string(options.trainable_blocks));
    }
    if (options.probe_size[0] <= 0 || options.probe_size[1] <= 0) {
      throw std::invalid_argument("encoder.probe_size must hold two sizes > 0");
    }
  }
}

EncoderImpl::EncoderImpl(const EncoderOptions& options, bool freeze_batchnorm)
    : name_(options.name),
      grid_(options.grid),
      position_(options.position),
      freeze_batchnorm_(freeze_batchnorm) {}

torch::Tensor EncoderImpl::forward(const torch::Tensor& images) {
  const torch::Tensor grid = forward_grid(images);      // [B, D, H', W']
  return grid.flatten(2).transpose(1, 2).contiguous();  // [B, L, D]
}

torch::Tensor EncoderImpl::forward_grid(const torch::Tensor& images) {
  if (images.dim() != 4 || images.size(1) != 3 || !images.is_floating_point()) {
    throw std::invalid_argument(
        "Encoder " + name_ + " expects float images [B, 3, H, W], got " + shape_text(images.sizes().vec()) +
        " of " + c10::toString(images.scalar_type()));
  }
  const auto native = native_grid_size(images.size(2), images.size(3));
  if (native[0] <= 0 || native[1] <= 0) {
    throw std::invalid_argument(
        "Images of " + std::to_string(images.size(2)) + "x" + std::to_string(images.size(3)) +
        " px are too small for encoder " + name_);
  }
  const auto out = grid_size(images.size(2), images.size(3));
  if (images.size(0) == 0) return torch::zeros({0, annotation_dim(), out[0], out[1]}, images.options());

  const size_t frozen = block_count() - static_cast<size_t>(trainable_blocks_);
  const size_t onednn = onednn_blocks(images);
  torch::Tensor x = images;  // [B, 3, H, W]
  {
    torch::NoGradGuard no_grad;
    if (onednn > 0) x = run_onednn_blocks(x, onednn);              // [B, C_i, H_i, W_i]
    for (size_t i = onednn; i < frozen; ++i) x = run_block(i, x);  // [B, C_i, H_i, W_i]
  }
  for (size_t i = std::max(frozen, onednn); i < block_count(); ++i)
    x = run_block(i, x);  // [B, C_i, H_i, W_i]
  if (grid_.has_value() && (x.size(2) != out[0] || x.size(3) != out[1])) {
    x = torch::adaptive_avg_pool2d(x, {out[0], out[1]});  // [B, D, H', W']
  }
  return add_grid_position(x, position_);  // [B, D (+ 2), H', W']
}

torch::Tensor EncoderImpl::run_onednn_blocks(const torch::Tensor& images, size_t blocks) {
  // Four 224 px images at a time (one of 448 px): a batch's early activations (ResNet-50's layer1
  // holds 3 MB per 224 px image, 13 MB at 448 px; VGG-19's first stage 13 MB) fall out of the
  // caches between convolutions, and batches of 8 at 448 px ran up to ~1.3x slower per image
  // than single images; at 224 px, chunks of 4 ran ResNet-50 1.15-1.3x faster than single images.
  constexpr int64_t kChunkPixels = 4 * 224 * 224;
  const int64_t chunk = std::max<int64_t>(1, kChunkPixels / (images.size(2) * images.size(3)));
  const at::ScalarType activations = onednn_activations();
  std::vector<torch::Tensor> outputs;
  for (int64_t start = 0; start < images.size(0); start += chunk) {
    torch::Tensor x =
        images.slice(0, start, start + chunk).contiguous().to_mkldnn(activations);  // [b, 3, H, W]
    for (size_t i = 0; i < blocks; ++i) x = run_block(i, x);  // oneDNN [b, C_i, H_i, W_i]
    outputs.push_back(x.to_dense().to(images.scalar_type()));
  }
  return outputs.size() == 1 ? outputs.front() : torch::cat(outputs);  // [B, C, H', W']
}

size_t EncoderImpl::onednn_blocks(const torch::Tensor& images) const {
  if (!onednn_inference_ || !runs_onednn_tensors() || !onednn_inference_available(images)) return 0;
  // Without autograd and in eval mode every block's BatchNorm statistics are fixed.
  if (!torch::GradMode::is_enabled() && !is_training()) return block_count();
  return block_count() - static_cast<size_t>(trainable_blocks_);
}

std::string EncoderImpl::inference_path(const torch::Tensor& images) const {
  const size_t onednn = onednn_blocks(images);
  if (onednn == 0) return "LibTorch modules";
  return std::string("oneDNN, prepared ") + (onednn_activations() == at::kBFloat16 ? "bf16" : "float32") +
         " weights: " + std::to_string(onednn) + " of " + std::to_string(block_count()) + " blocks";
}

std::array<int64_t, 2> EncoderImpl::grid_size(int64_t height, int64_t width) const {
  if (grid_.has_value()) return *grid_;
  return native_grid_size(height, width);
}

void EncoderImpl::set_trainable_blocks(int64_t count) {
  const int64_t blocks = num_blocks();
  if (count < -1 || count > blocks) {
    throw std::invalid_argument(
        "encoder.trainable_blocks for " + name_ + " must be in -1 .. " + std::to_string(blocks) +
        " (it has " + std::to_string(blocks) + " blocks), got " + std::to_string(count));
  }
  trainable_blocks_ = count < 0 ? blocks : count;
  const size_t frozen = block_count() - static_cast<size_t>(trainable_blocks_);
  for (size_t i = 0; i < block_count(); ++i) {
    for (const auto& module : block_modules(i)) {
      for (auto& parameter : module->parameters(/*recurse=*/true)) parameter.set_requires_grad(i >= frozen);
    }
  }
  train(is_training());
}

void EncoderImpl::train(bool on) {
  torch::nn::Module::train(on);
  const size_t frozen = block_count() - static_cast<size_t>(trainable_blocks_);
  for (size_t i = 0; i < frozen; ++i) {
    for (const auto& module : block_modules(i)) module->eval();
  }
  if (freeze_batchnorm_) {
    for (const auto& module : modules(/*include_self=*/false)) {
      if (dynamic_cast<torch::nn::BatchNorm2dImpl*>(module.get()) != nullptr) module->eval();
    }
  }
}

namespace {

// small_cnn, resnet18..152, vgg16, vgg19, torchscript.
Registry<EncoderBuilder>::Entries builtin_encoders() {
  Registry<EncoderBuilder>::Entries builtins;
  builtins.emplace_back(
      "small_cnn", [](const EncoderOptions& o) { return std::make_shared<SmallCnnImpl>(o); });
  for (const int depth : {18, 34, 50, 101, 152}) {
    builtins.emplace_back("resnet" + std::to_string(depth), [depth](const EncoderOptions& o) {
      return std::make_shared<ResNetImpl>(depth, o);
    });
  }
  for (const int depth : {16, 19}) {
    builtins.emplace_back("vgg" + std::to_string(depth), [depth](const EncoderOptions& o) {
      return std::make_shared<VggImpl>(depth, o);
    });
  }
  builtins.emplace_back(
      "torchscript", [](const EncoderOptions& o) { return std::make_shared<TorchScriptEncoderImpl>(o); });
  return builtins;
}

}  // namespace

Registry<EncoderBuilder>& encoder_registry() {
  static Registry<EncoderBuilder> registry("encoder", builtin_encoders());
  return registry;
}

Encoder build_encoder(const EncoderOptions& options) {
  validate(options);
  std::shared_ptr<EncoderImpl> encoder = encoder_registry().get(options.name)(options);
  if (options.position == GridPosition::sinusoidal && encoder->feature_dim() % 4 != 0) {
    throw std::invalid_argument(
        "encoder.position sinusoidal needs annotations whose dimension is a multiple of 4; " + options.name +
        " gives " + std::to_string(encoder->feature_dim()));
  }
  if (options.weights.has_value()) {
    LoadStateDictOptions load;
    load.ignored_prefixes = {"fc.", "classifier.", "head.", "pre_logits."};
    load.destination = "encoder " + options.name;
    load_state_dict(*encoder, SafetensorsReader(*options.weights), load);
  }
  encoder->set_trainable_blocks(options.trainable_blocks);
  encoder->train(true);
  return Encoder(encoder);
}

}  // namespace saccade
