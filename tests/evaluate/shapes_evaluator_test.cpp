// The shapes-world evaluator on grids of any shape: the pointing game reads the attention on the
// encoder's [H', W'] grid, not on a square guessed from L.
#include "evaluate/shapes_evaluator.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "test_util.h"

namespace saccade {
namespace {

using testing::TempDir;
using testing::write_file;

// One 36 x 36 image holding a red circle in the box [24, 28) x [0, 9), seen at its own size.
DatasetOptions one_circle_world(const TempDir& dir) {
  write_file(
      dir / "shapes_truth.json",
      R"({"format": "saccade-shapes-truth", "version": 1, "image_size": 36, "images": [{"imgid": 0,
          "filename": "images/000000.png", "split": "test", "objects": [{"shape": "circle", "color": "red",
          "size": "small", "box": [24, 0, 28, 9]}], "captions": []}]})");
  DatasetOptions options;
  options.kind = "shapes";
  options.root = dir.path();
  options.image.resize = 36;
  options.image.crop = 36;
  return options;
}

// Attention for each of `words` words, all of it on location `cell` of `locations`.
torch::Tensor peaked(int64_t words, int64_t locations, int64_t cell) {
  auto alphas = torch::zeros({words, locations});
  alphas.select(1, cell).fill_(1.0f);
  return alphas;
}

TEST(ShapesEvaluator, PointsOnTheCellsOfAFourByNineGrid) {
  TempDir dir;
  ShapesEvaluator shapes(one_circle_world(dir));
  // On a 4 x 9 grid over 36 x 36 pixels cells are 4 wide and 9 tall; only cell (0, 6), centre
  // (26, 4.5), lies in the box. Read as a 6 x 6 grid, location 6 would be cell (1, 0), centre
  // (3, 9): outside.
  shapes.add("0", {"a", "red", "circle"}, peaked(3, 36, 6), {4, 9}, 36, 36);
  const ShapesScores scores = shapes.scores();
  EXPECT_EQ(scores.pointing_words, 2);  // "red" and "circle" name the one object
  EXPECT_DOUBLE_EQ(scores.pointing_accuracy.value(), 1.0);
  EXPECT_DOUBLE_EQ(scores.pointing_baseline.value(), 1.0 / 36.0);
  EXPECT_DOUBLE_EQ(scores.content_accuracy.value(), 1.0);
  EXPECT_FALSE(scores.relation_accuracy.has_value());  // no relation stated: n/a, not 0
}

TEST(ShapesEvaluator, AttentionThatDoesNotFitTheGridIsAnError) {
  TempDir dir;
  ShapesEvaluator shapes(one_circle_world(dir));
  EXPECT_THROW(
      shapes.add("0", {"a", "red", "circle"}, peaked(3, 36, 6), {6, 7}, 36, 36), std::invalid_argument);
  EXPECT_THROW(shapes.add("9", {"a"}, peaked(1, 36, 0), {4, 9}, 36, 36), std::runtime_error);
}

}  // namespace
}  // namespace saccade
