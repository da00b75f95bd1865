// ShapesEvaluator: the shapes-world metrics (eval/shapes_metrics.h) fed straight from decoded
// captions, for `saccade eval` and the trainer's final summary.
//
//   ShapesEvaluator shapes(dataset_options);                // reads <root>/shapes_truth.json
//   for (each batch) for (each image b)
//     shapes.add(batch.image_ids[b], vocabulary.decode(caption.tokens), caption.alphas,
//                batch.images.size(2), batch.images.size(3));
//   ShapesScores scores = shapes.scores();
//
// The truth boxes are mapped through the dataset's resize and crop (map_box) into the pixels of
// the model's input, which the attention grid tiles evenly. The grid must be square (H = W =
// sqrt(L), as the encoders give on square crops); otherwise the pointing game is skipped and
// only the caption metrics count. Multihead attention is averaged over heads.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "data/prepare.h"
#include "eval/shapes_metrics.h"

namespace saccade {

class ShapesEvaluator {
 public:
  // Loads dataset.root/shapes_truth.json. Throws std::invalid_argument unless dataset.kind is
  // shapes, and what load_shapes_truth throws.
  explicit ShapesEvaluator(const DatasetOptions& dataset);

  // Adds one generated caption: its words and their attention alphas [n, L] ([n, N, L]
  // multihead), for an input image of input_height x input_width pixels. Throws
  // std::runtime_error when the truth has no such image.
  void add(
      const std::string& image_id,
      const std::vector<std::string>& words,
      const torch::Tensor& alphas,
      int64_t input_height,
      int64_t input_width);

  ShapesScores scores() const { return finish(tally_); }

 private:
  ShapesTruth truth_;
  ImageOptions image_;
  ShapesTally tally_;
};

}  // namespace saccade
