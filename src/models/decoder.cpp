// What both decoders share: DecoderState's row selection, the teacher-forced batch's checks and
// build_decoder (see decoder.h).
#include "models/decoder.h"

#include <torch/torch.h>

#include <stdexcept>
#include <vector>

#include "kernels/attention_kernels.h"
#include "models/attention_lstm_decoder.h"
#include "models/tensor_rows.h"
#include "models/transformer_decoder.h"

namespace saccade {

std::vector<int64_t> parameter_versions(const torch::nn::Module& module) {
  std::vector<int64_t> versions;
  for (const auto& parameter : module.parameters()) {
    versions.push_back(reinterpret_cast<intptr_t>(parameter.data_ptr()));
    versions.push_back(static_cast<int64_t>(parameter._version()));
  }
  return versions;
}

DecoderState DecoderState::index_select(const torch::Tensor& index) const {
  if (grid_beams != 1)
    throw std::logic_error(
        "DecoderState::index_select: the rows share their image's grid; reorder_beams moves them");
  return select_images(index, 1);
}

DecoderState DecoderState::select_images(const torch::Tensor& images, int64_t beams) const {
  if (grid_beams != 1 && grid_beams != beams)
    throw std::logic_error(
        "DecoderState::select_images: " + std::to_string(beams) +
        " rows per image, but the grid is kept per " + std::to_string(grid_beams) + " rows");
  const auto rows =
      beams == 1 ? images : (images.unsqueeze(1) * beams + torch::arange(beams, images.options())).view(-1);
  DecoderState selected = reorder_beams(rows);
  if (memory.keys.defined())
    selected.memory = memory.beams == beams ? memory.select_images(images, rows) : memory.index_select(rows);
  if (grid_keys.empty()) return selected;
  const auto& chosen = grid_beams > 1 ? images : rows;
  const auto read = rows_read(grid_images, chosen);
  if (kernels_read_in_place(grid_keys.front()) && kernels_read_in_place(grid_values.front())) {
    selected.grid_images = read;
  } else {
    selected.grid_keys = rows_of(grid_keys, read);
    selected.grid_values = rows_of(grid_values, read);
    selected.grid_images = torch::Tensor();
  }
  return selected;
}

DecoderState DecoderState::reorder_beams(const torch::Tensor& index) const {
  DecoderState reordered = *this;
  reordered.h = rows_of(h, index);
  reordered.c = rows_of(c, index);
  reordered.memory.history = memory.history.rows(index);
  reordered.word_keys = rows_of(word_keys, index);
  reordered.word_values = rows_of(word_values, index);
  return reordered;
}

std::vector<int64_t> checked_lengths(
    const torch::Tensor& annotations, const torch::Tensor& tokens, const torch::Tensor& lengths) {
  if (tokens.dim() != 2 || tokens.size(1) < 1 || annotations.dim() != 3 ||
      tokens.size(0) != annotations.size(0)) {
    throw std::invalid_argument(
        "The decoder expects tokens [B, T] with T >= 1 for annotations [B, L, D], got tokens " +
        c10::str(tokens.sizes()) + " and annotations " + c10::str(annotations.sizes()));
  }
  const int64_t B = tokens.size(0), T = tokens.size(1);
  if (lengths.dim() != 1 || lengths.size(0) != B) {
    throw std::invalid_argument(
        "The decoder expects lengths [" + std::to_string(B) + "], got " + c10::str(lengths.sizes()));
  }
  const auto values = lengths.to(torch::kCPU, torch::kLong).contiguous();
  std::vector<int64_t> length(values.data_ptr<int64_t>(), values.data_ptr<int64_t>() + B);
  for (int64_t b = 0; b < B; ++b) {
    if (length[b] < 0 || length[b] > T) {
      throw std::invalid_argument(
          "lengths[" + std::to_string(b) + "] = " + std::to_string(length[b]) + " is outside [0, " +
          std::to_string(T) + "]");
    }
  }
  return length;
}

CaptionDecoder build_decoder(const DecoderOptions& options) {
  validate(options);
  std::shared_ptr<CaptionDecoderImpl> decoder;
  if (options.kind == DecoderKind::transformer) {
    decoder = std::make_shared<TransformerDecoderImpl>(options);
  } else {
    decoder = std::make_shared<AttentionLSTMDecoderImpl>(options);
  }
  return CaptionDecoder(std::move(decoder));
}

}  // namespace saccade
