// ShapesEvaluator: truth lookup, box mapping and attention conversion for the shapes metrics.
#include "evaluate/shapes_evaluator.h"

#include <stdexcept>

namespace saccade {

ShapesEvaluator::ShapesEvaluator(const DatasetOptions& dataset) : image_(dataset.image) {
  if (dataset.kind != "shapes") {
    throw std::invalid_argument("The shapes metrics need dataset.kind shapes, got '" + dataset.kind + "'");
  }
  truth_ = load_shapes_truth(dataset.root / kShapesTruthFile);
}

std::vector<ShapesObject> ShapesEvaluator::objects_of(const std::string& image_id) const {
  const ShapesImageTruth* image = truth_.find(image_id);
  if (image == nullptr) throw std::runtime_error(std::string(kShapesTruthFile) + " has no image " + image_id);
  std::vector<ShapesObject> objects;
  for (const ShapeObject& object : image->objects) {
    const Box box = map_box(object.box, truth_.image_size, truth_.image_size, image_);
    objects.push_back({object.shape, object.color, object.size, box.x0, box.y0, box.x1, box.y1});
  }
  return objects;
}

std::vector<RelationProbe> ShapesEvaluator::relation_probes(const std::string& image_id) const {
  return saccade::relation_probes(objects_of(image_id));
}

void ShapesEvaluator::add(
    const std::string& image_id,
    const std::vector<std::string>& words,
    const torch::Tensor& alphas,
    std::array<int64_t, 2> grid,
    int64_t input_height,
    int64_t input_width) {
  const int64_t locations = alphas.size(-1);
  if (grid[0] * grid[1] != locations) {
    throw std::invalid_argument(
        "Attention over " + std::to_string(locations) + " locations does not fit a " +
        std::to_string(grid[0]) + "x" + std::to_string(grid[1]) + " grid");
  }
  const std::vector<ShapesObject> objects = objects_of(image_id);
  ShapesCaption caption;
  caption.words = words;
  const auto maps = (alphas.dim() == 3 ? alphas.mean(1) : alphas).to(torch::kFloat).contiguous();  // [n, L]
  for (int64_t i = 0; i < maps.size(0); ++i) {
    const float* row = maps.data_ptr<float>() + i * locations;
    caption.alphas.emplace_back(row, row + locations);
  }
  const AttentionGrid attention_grid{
      grid[0], grid[1], static_cast<float>(input_height), static_cast<float>(input_width)};
  add_shapes_caption(tally_, objects, caption, attention_grid);
}

}  // namespace saccade
