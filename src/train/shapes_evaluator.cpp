// ShapesEvaluator: truth lookup, box mapping and attention conversion for the shapes metrics.
#include "train/shapes_evaluator.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace saccade {

ShapesEvaluator::ShapesEvaluator(const DatasetOptions& dataset) : image_(dataset.image) {
  if (dataset.kind != "shapes") {
    throw std::invalid_argument("The shapes metrics need dataset.kind shapes, got '" + dataset.kind + "'");
  }
  truth_ = load_shapes_truth(dataset.root / kShapesTruthFile);
}

void ShapesEvaluator::add(
    const std::string& image_id,
    const std::vector<std::string>& words,
    const torch::Tensor& alphas,
    int64_t input_height,
    int64_t input_width) {
  const ShapesImageTruth* image = truth_.find(image_id);
  if (image == nullptr) throw std::runtime_error(std::string(kShapesTruthFile) + " has no image " + image_id);
  std::vector<ShapesObject> objects;
  for (const ShapeObject& object : image->objects) {
    const Box box = map_box(object.box, truth_.image_size, truth_.image_size, image_);
    objects.push_back({object.shape, object.color, object.size, box.x0, box.y0, box.x1, box.y1});
  }
  ShapesCaption caption;
  caption.words = words;
  const int64_t locations = alphas.size(-1);
  const auto side = static_cast<int64_t>(std::lround(std::sqrt(static_cast<double>(locations))));
  if (side * side == locations) {
    const auto maps = (alphas.dim() == 3 ? alphas.mean(1) : alphas).to(torch::kFloat).contiguous();  // [n, L]
    for (int64_t i = 0; i < maps.size(0); ++i) {
      const float* row = maps.data_ptr<float>() + i * locations;
      caption.alphas.emplace_back(row, row + locations);
    }
  }
  const AttentionGrid grid{
      std::max<int64_t>(side, 1), std::max<int64_t>(side, 1), static_cast<float>(input_height),
      static_cast<float>(input_width)};
  add_shapes_caption(tally_, objects, caption, grid);
}

}  // namespace saccade
