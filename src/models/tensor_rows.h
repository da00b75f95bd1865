// Row selection of tensors that may be undefined: how the decoders' states and the attention
// memory pick the rows of a batch (beams, or the images still in a search).
#pragma once

#include <torch/types.h>

#include <vector>

namespace saccade {

// Rows `index` of x (undefined stays undefined): how the decoders' states select their rows.
torch::Tensor rows_of(const torch::Tensor& x, const torch::Tensor& index);
// The same for each of xs (a per-layer cache).
std::vector<torch::Tensor> rows_of(const std::vector<torch::Tensor>& xs, const torch::Tensor& index);
// The rows of a memory that images `chosen` (positions among those of `images`) read, where the
// images already read rows `images` of it (undefined: every row, in order).
torch::Tensor rows_read(const torch::Tensor& images, const torch::Tensor& chosen);

}  // namespace saccade
