// RunningMembers: what a caption search still decodes, and when what has finished leaves it.
//
//   RunningMembers running(batch, rows_per_member);   // greedy: 1 (a caption), beam: K (an image)
//   for (each step over running.size() members) {
//     outputs.push_back(running.in_batch_rows(x));    // [n, ...] -> [batch, ...]
//     const auto next = running.after_step(finished); // finished: per batch member
//     ... the next step extends this step's rows next.rows; when next.kept is not empty, the
//     ... members kept (positions among this step's) are selected from the state
//   }
//
// Members leave as soon as they finish: where the CPU kernels read the attention memory, the
// images left read their keys and values through an index (AttentionMemory::images,
// DecoderState::grid_images) and leaving copies only the rows' own state (h, c, the words'
// keys and values). Measured with `bench beam` (captions of 8-20 words, 2-core Xeon), against
// leaving in groups (half of the captions, a quarter of beam search's images) as when the memory
// was copied: greedy and beam 5 over 32 images faster in fp32 and bf16. A caption is the one its
// image gets decoded alone, up to the rounding of products over other row counts; sampling draws
// for the rows still decoded, so a seed repeats its captions.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <vector>

namespace saccade {

class RunningMembers {
 public:
  RunningMembers(int64_t batch, int64_t rows_per_member);

  // The members decoded, as positions in the batch, in the order of the state's rows.
  const std::vector<int64_t>& positions() const { return positions_; }
  int64_t size() const { return static_cast<int64_t>(positions_.size()); }

  // x [n, ...] of the members decoded as [batch, ...] in the batch's order, `fill` where members
  // left; x itself while none has left.
  torch::Tensor in_batch_rows(const torch::Tensor& x, double fill = 0.0) const;

  struct Next {
    std::vector<int64_t> rows;  // the rows of this step that the next step's rows extend, in order
    std::vector<int64_t> kept;  // when members leave: the positions (among this step's) kept
  };
  // After a step, `finished` telling per batch member whether it is done (some member of this
  // step's must not be): whether the finished leave now, and which rows go on.
  Next after_step(const std::vector<char>& finished);

 private:
  int64_t batch_;
  int64_t rows_per_member_;
  std::vector<int64_t> positions_;
};

}  // namespace saccade
