// ShapesEvaluator: the shapes-world metrics (eval/shapes_metrics.h) fed straight from decoded
// captions, for measure_split (evaluate/split_evaluation.h).
//
//   ShapesEvaluator shapes(dataset_options);                // reads <root>/shapes_truth.json
//   for (each batch) for (each image b)
//     shapes.add(batch.image_ids[b], vocabulary.decode(caption.tokens), caption.alphas,
//                encoder->grid_size(height, width), height, width);
//   for (const RelationProbe& probe : shapes.relation_probes(image_id))   // the forced choice
//     shapes.add_relation_choice(log_prob(probe.stated), log_prob(probe.swapped));
//   ShapesScores scores = shapes.scores();
//
// The truth boxes are mapped through the dataset's resize and crop (map_box) into the pixels of
// the model's input, which the encoder's attention grid (any H' x W') tiles evenly. Multihead
// attention is averaged over heads.
#pragma once

#include <torch/types.h>

#include <array>
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
  // multihead) on a grid of [H', W'] = `grid` cells (L = H' W', row-major), for an input image of
  // input_height x input_width pixels. Throws std::runtime_error when the truth has no such
  // image, std::invalid_argument when L is not H' W'.
  void add(
      const std::string& image_id,
      const std::vector<std::string>& words,
      const torch::Tensor& alphas,
      std::array<int64_t, 2> grid,
      int64_t input_height,
      int64_t input_width);

  // The forced-choice probes of an image (relation_probes in eval/shapes_metrics.h). Throws
  // std::runtime_error when the truth has no such image.
  std::vector<RelationProbe> relation_probes(const std::string& image_id) const;
  void add_relation_choice(double stated_log_prob, double swapped_log_prob) {
    saccade::add_relation_choice(tally_, stated_log_prob, swapped_log_prob);
  }

  ShapesScores scores() const { return finish(tally_); }

 private:
  // The image's objects with their boxes in the model input's pixels.
  std::vector<ShapesObject> objects_of(const std::string& image_id) const;

  ShapesTruth truth_;
  ImageOptions image_;
  ShapesTally tally_;
};

}  // namespace saccade
