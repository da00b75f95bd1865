// The refiner's layers, options and the refiner (see grid_refiner.h).
#include "models/grid_refiner.h"

#include <stdexcept>

#include "base/enum_names.h"
#include "config/config.h"
#include "models/architecture_keys.h"
#include "models/grid_position.h"

namespace saccade {

RefinerLayerImpl::RefinerLayerImpl(int64_t dim, int64_t heads, int64_t ffn_dim, double dropout_p)
    : self_attn(register_module("self_attn", TransformerAttention(dim, heads, dropout_p))),
      linear1(register_module("linear1", torch::nn::Linear(dim, ffn_dim))),
      linear2(register_module("linear2", torch::nn::Linear(ffn_dim, dim))),
      norm1(register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      norm2(register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({dim})))),
      dropout(register_module("dropout", torch::nn::Dropout(dropout_p))) {}

HeadsOutput RefinerLayerImpl::forward(const torch::Tensor& x, PackedWeights packed) {
  HeadsOutput attended = self_attn->forward(x, {}, packed);
  const torch::Tensor mixed = norm1(x + dropout(attended.output));
  return {residual_feed_forward(mixed, linear1, linear2, norm2, dropout, packed), attended.weights};
}

const EnumNames<RefinerPosition> kRefinerPositionNames(
    "refiner position", {{RefinerPosition::sinusoidal, "sinusoidal"}, {RefinerPosition::learned, "learned"}});

std::string to_string(RefinerPosition position) {
  return kRefinerPositionNames.name(position);
}

RefinerPosition parse_refiner_position(const std::string& name) {
  return kRefinerPositionNames.parse(name);
}

RefinerOptions refiner_options_from(const Config& config, ArchitectureKeys* architecture) {
  const auto shaping = [architecture](const char* key) {
    return ArchitectureKeys::record(architecture, key);
  };
  RefinerOptions options;
  if (!config.has("encoder.refiner")) return options;
  options.kind = config.get<std::string>(shaping("encoder.refiner.kind"));
  // Without a refiner its other keys shape nothing.
  const auto refining = [&](const char* key) { return options.enabled() ? shaping(key) : key; };
  options.layers = config.get<int64_t>(refining("encoder.refiner.layers"));
  options.heads = config.get<int64_t>(refining("encoder.refiner.heads"));
  options.ffn_dim = config.get<int64_t>(refining("encoder.refiner.ffn_dim"));
  options.dropout = config.get<double>("encoder.refiner.dropout");
  options.position = config.get_parsed(refining("encoder.refiner.position"), parse_refiner_position);
  return options;
}

void validate(const RefinerOptions& options, int64_t dim, const std::array<int64_t, 2>& grid) {
  const auto fail = [](const std::string& message) { throw std::invalid_argument(message); };
  if (options.kind != "none" && options.kind != "transformer") {
    fail("encoder.refiner.kind must be none or transformer, got '" + options.kind + "'");
  }
  if (!options.enabled()) return;
  if (options.layers < 1) fail("encoder.refiner.layers must be >= 1, got " + std::to_string(options.layers));
  if (options.ffn_dim < 1)
    fail("encoder.refiner.ffn_dim must be >= 1, got " + std::to_string(options.ffn_dim));
  if (options.heads < 1 || dim % options.heads != 0) {
    fail(
        "encoder.refiner.heads=" + std::to_string(options.heads) + " does not divide the annotation width " +
        std::to_string(dim));
  }
  if (!(options.dropout >= 0.0 && options.dropout < 1.0)) {
    fail("encoder.refiner.dropout must be in [0, 1), got " + std::to_string(options.dropout));
  }
  if (options.position == RefinerPosition::sinusoidal && dim % 4 != 0) {
    fail(
        "encoder.refiner.position=sinusoidal needs an annotation width divisible by 4, got " +
        std::to_string(dim) + " (use learned)");
  }
  if (options.position == RefinerPosition::learned && grid[0] * grid[1] <= 0) {
    fail("encoder.refiner.position=learned needs a fixed grid: set encoder.grid");
  }
}

GridRefinerImpl::GridRefinerImpl(
    const RefinerOptions& options, int64_t dim, const std::array<int64_t, 2>& grid)
    : options_(options), dim_(dim), grid_(grid) {
  validate(options, dim, grid);
  layers = register_module("layers", torch::nn::ModuleList());
  for (int64_t i = 0; i < options.layers; ++i) {
    layers->push_back(RefinerLayer(dim, options.heads, options.ffn_dim, options.dropout));
  }
  if (options.position == RefinerPosition::learned) {
    position = register_parameter("position", torch::randn({grid[0] * grid[1], dim}) * 0.02);
  }
}

RefinedGrid GridRefinerImpl::refine(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid) {
  const auto sizes = [](const torch::IntArrayRef shape) {
    std::string text;
    for (const int64_t size : shape) text += (text.empty() ? "" : ", ") + std::to_string(size);
    return "[" + text + "]";
  };
  const int64_t locations = grid[0] * grid[1];
  if (annotations.dim() != 3 || annotations.size(1) != locations || annotations.size(2) != dim_) {
    throw std::invalid_argument(
        "The refiner takes annotations [B, " + std::to_string(locations) + ", " + std::to_string(dim_) +
        "] on its " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]) + " grid, got " +
        sizes(annotations.sizes()));
  }
  if (position.defined() && grid != grid_) {
    throw std::invalid_argument(
        "The refiner's learned position table covers a " + std::to_string(grid_[0]) + " x " +
        std::to_string(grid_[1]) + " grid, not " + std::to_string(grid[0]) + " x " + std::to_string(grid[1]));
  }
  const torch::Tensor added =
      position.defined()
          ? position
          : sinusoidal_encoding_2d(dim_, grid[0], grid[1], annotations.options()).flatten(1).t();
  RefinedGrid refined{annotations + added, {}};
  for (const auto& layer : *layers) {
    HeadsOutput out = layer->as<RefinerLayerImpl>()->forward(refined.annotations);
    refined.annotations = out.output;
    refined.maps.push_back(out.weights);
  }
  return refined;
}

torch::Tensor GridRefinerImpl::forward(const torch::Tensor& annotations, const std::array<int64_t, 2>& grid) {
  return refine(annotations, grid).annotations;
}

}  // namespace saccade
