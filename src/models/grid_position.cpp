// Coordinate channels and 2D sinusoidal encodings for the annotation grid.
#include "models/grid_position.h"

#include <cmath>
#include <stdexcept>

#include "base/enum_names.h"

namespace saccade {
namespace {

const EnumNames<GridPosition> kGridPositionNames(
    "grid position",
    {{GridPosition::none, "none"},
     {GridPosition::coords, "coords"},
     {GridPosition::sinusoidal, "sinusoidal"}});

}  // namespace

torch::Tensor sinusoidal_encoding(
    int64_t first, int64_t count, int64_t channels, const torch::TensorOptions& options) {
  if (channels <= 0 || channels % 2 != 0) {
    throw std::invalid_argument(
        "A sinusoidal encoding needs a positive even dimension, got " + std::to_string(channels));
  }
  const auto position =
      torch::arange(first, first + count, options.dtype(torch::kDouble)).unsqueeze(1);       // [P, 1]
  const auto two_i = torch::arange(0, channels, 2, options.dtype(torch::kDouble));           // [C/2]
  const auto angle = position / torch::pow(10000.0, two_i / static_cast<double>(channels));  // [P, C/2]
  return torch::stack({torch::sin(angle), torch::cos(angle)}, 2)
      .reshape({count, channels})
      .to(options.dtype());  // [P, C]
}

std::string to_string(GridPosition position) {
  return kGridPositionNames.name(position);
}
GridPosition parse_grid_position(const std::string& name) {
  return kGridPositionNames.parse(name);
}

int64_t added_channels(GridPosition position) {
  return position == GridPosition::coords ? 2 : 0;
}

torch::Tensor coordinate_channels(int64_t height, int64_t width, const torch::TensorOptions& options) {
  const auto centres = [&](int64_t count) {
    return (torch::arange(count, options.dtype(torch::kDouble)) * 2 + 1) / static_cast<double>(count) - 1;
  };
  const auto x = centres(width).view({1, width}).expand({height, width});
  const auto y = centres(height).view({height, 1}).expand({height, width});
  return torch::stack({x, y}).to(options.dtype());  // [2, H, W]
}

torch::Tensor sinusoidal_encoding_2d(
    int64_t dim, int64_t height, int64_t width, const torch::TensorOptions& options) {
  if (dim <= 0 || dim % 4 != 0) {
    throw std::invalid_argument(
        "A 2D sinusoidal encoding needs a dimension that is a positive multiple of 4, got " +
        std::to_string(dim));
  }
  const int64_t half = dim / 2;
  const auto rows = sinusoidal_encoding(0, height, half, options).t().view({half, height, 1});   // [d, H, 1]
  const auto columns = sinusoidal_encoding(0, width, half, options).t().view({half, 1, width});  // [d, 1, W]
  return torch::cat(
      {rows.expand({half, height, width}), columns.expand({half, height, width})});  // [dim, H, W]
}

torch::Tensor add_grid_position(const torch::Tensor& grid, GridPosition position) {
  const int64_t batch = grid.size(0), channels = grid.size(1), height = grid.size(2), width = grid.size(3);
  switch (position) {
    case GridPosition::coords:
      return torch::cat(
          {grid,
           coordinate_channels(height, width, grid.options()).unsqueeze(0).expand({batch, 2, height, width})},
          1);
    case GridPosition::sinusoidal:
      return grid + sinusoidal_encoding_2d(channels, height, width, grid.options()).unsqueeze(0);
    case GridPosition::none:
      break;
  }
  return grid;
}

}  // namespace saccade
