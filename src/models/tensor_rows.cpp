// Row selection of tensors that may be undefined (see tensor_rows.h).
#include "models/tensor_rows.h"

namespace saccade {

torch::Tensor rows_of(const torch::Tensor& x, const torch::Tensor& index) {
  return x.defined() ? x.index_select(0, index) : x;
}

std::vector<torch::Tensor> rows_of(const std::vector<torch::Tensor>& xs, const torch::Tensor& index) {
  std::vector<torch::Tensor> rows;
  for (const auto& x : xs) rows.push_back(rows_of(x, index));
  return rows;
}

torch::Tensor rows_read(const torch::Tensor& images, const torch::Tensor& chosen) {
  return images.defined() ? images.index_select(0, chosen) : chosen;
}

}  // namespace saccade
