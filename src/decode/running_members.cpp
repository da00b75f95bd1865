// RunningMembers: the members a search still decodes (see running_members.h).
#include "decode/running_members.h"

#include <torch/torch.h>

#include <numeric>

namespace saccade {

RunningMembers::RunningMembers(int64_t batch, int64_t rows_per_member)
    : batch_(batch), rows_per_member_(rows_per_member), positions_(static_cast<size_t>(batch)) {
  std::iota(positions_.begin(), positions_.end(), 0);
}

torch::Tensor RunningMembers::in_batch_rows(const torch::Tensor& x, double fill) const {
  if (size() == batch_) return x;
  auto sizes = x.sizes().vec();
  sizes[0] = batch_;
  const auto index = torch::tensor(positions_, torch::kLong).to(x.device());
  return torch::full(sizes, fill, x.options()).index_copy_(0, index, x);
}

RunningMembers::Next RunningMembers::after_step(const std::vector<char>& finished) {
  std::vector<int64_t> going_on;  // positions among this step's members
  for (int64_t i = 0; i < size(); ++i) {
    if (!finished[positions_[i]]) going_on.push_back(i);
  }
  Next next;
  if (static_cast<int64_t>(going_on.size()) == size()) {
    next.rows.resize(static_cast<size_t>(size() * rows_per_member_));
    std::iota(next.rows.begin(), next.rows.end(), 0);
    return next;
  }
  std::vector<int64_t> kept_positions;
  for (const int64_t i : going_on) {
    kept_positions.push_back(positions_[i]);
    for (int64_t k = 0; k < rows_per_member_; ++k) next.rows.push_back(i * rows_per_member_ + k);
  }
  next.kept = std::move(going_on);
  positions_ = std::move(kept_positions);
  return next;
}

}  // namespace saccade
