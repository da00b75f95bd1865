// Where each annotation sits: position added to the encoder's grid, so that attention can say
// "where" and not only "what" (a CNN's features carry little absolute position, and the
// attention-weighted context none at all).
//
//   torch::Tensor xy = coordinate_channels(8, 8, options);      // [2, 8, 8]: x, y of each cell
//   torch::Tensor pe = sinusoidal_encoding_2d(128, 8, 8, opts);  // [128, 8, 8]
//
// Coordinates: cell (r, c) of an H x W grid has x = (2c + 1) / W - 1 and y = (2r + 1) / H - 1,
// its centre in [-1, 1] (left/top negative).
// Sinusoidal (Vaswani et al. 2017's formula, per axis): with d = dim / 2, channels [0, d) encode
// the row r and channels [d, dim) the column c; within an axis at position p,
//   PE(p, 2i) = sin(p / 10000^(2i / d)),  PE(p, 2i + 1) = cos(p / 10000^(2i / d)).
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>

namespace saccade {

// How position enters the annotations (encoder.position):
//   none        the CNN's features as they are
//   coords      two channels appended: the cell's x and y (D grows by 2)
//   sinusoidal  the 2D sinusoidal encoding added to the features (D unchanged; D % 4 == 0)
enum class GridPosition { none, coords, sinusoidal };
std::string to_string(GridPosition position);
// Throws std::invalid_argument naming the value and the choices.
GridPosition parse_grid_position(const std::string& name);

// Channels the position adds to D features: 2 for coords, 0 otherwise.
int64_t added_channels(GridPosition position);

// [count, channels]: the 1D encoding of positions first .. first + count - 1 (Vaswani et al.'s
// formula above, with d = channels). Throws std::invalid_argument unless channels is positive and even.
torch::Tensor sinusoidal_encoding(
    int64_t first, int64_t count, int64_t channels, const torch::TensorOptions& options);

// [2, height, width]: x then y of each cell's centre, in [-1, 1].
torch::Tensor coordinate_channels(int64_t height, int64_t width, const torch::TensorOptions& options);

// [dim, height, width] as above. Throws std::invalid_argument unless dim is a positive multiple of 4.
torch::Tensor sinusoidal_encoding_2d(
    int64_t dim, int64_t height, int64_t width, const torch::TensorOptions& options);

// The grid [B, D, H, W] with `position` applied: [B, D + added_channels(position), H, W].
torch::Tensor add_grid_position(const torch::Tensor& grid, GridPosition position);

}  // namespace saccade
