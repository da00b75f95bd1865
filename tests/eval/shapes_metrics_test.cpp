// Shapes-world metrics on a hand-made image: pointing game hits and baseline, content and
// relation accuracy worked out by hand.
#include "eval/shapes_metrics.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace saccade {
namespace {

// A 64 x 64 image under a 4 x 4 grid: 16-pixel cells with centres at 8, 24, 40, 56.
const AttentionGrid kGrid{4, 4, 64, 64};

// 0: small red circle [0,20)x[0,20): covers the centre (8,8) only, 1 cell.
// 1: large blue square [30,64)x[30,64): centres x, y in {40, 56}, 4 cells.
// 2: small red star [40,60)x[0,20): centres (40,8) and (56,8), 2 cells.
std::vector<ShapesObject> objects() {
  return {
      {"circle", "red", "small", 0, 0, 20, 20},
      {"square", "blue", "large", 30, 30, 64, 64},
      {"star", "red", "small", 40, 0, 60, 20},
  };
}

// All attention on cell (row, col).
std::vector<float> peak(int row, int col) {
  std::vector<float> alpha(16, 0.01f);
  alpha[static_cast<size_t>(row * 4 + col)] = 0.85f;
  return alpha;
}

ShapesCaption words(std::vector<std::string> list) {
  return {std::move(list), {}};
}

TEST(ShapesMetrics, HandWorkedSplit) {
  ShapesTally tally;
  // "blue" names object 1 (peak (2,2), centre (40,40): hit, baseline 4/16); "square" object 1
  // (peak (0,0): miss, 4/16); "red" is ambiguous (objects 0 and 2), skipped; "star" object 2
  // (peak (0,3), centre (56,8): hit, 2/16). Relation "blue square above red star": 64 <= 0 false.
  ShapesCaption first = words({"a", "blue", "square", "above", "a", "red", "star"});
  first.alphas = {peak(0, 0), peak(2, 2), peak(0, 0), peak(1, 1), peak(1, 1), peak(0, 0), peak(0, 3)};
  add_shapes_caption(tally, objects(), first, kGrid);
  // Two red circles: one exists, so 1 of 2 matched.
  add_shapes_caption(tally, objects(), words({"two", "red", "circles"}), kGrid);
  // Left of: the circle's x1 = 20 <= the square's x0 = 30: true; both mentions match.
  add_shapes_caption(
      tally, objects(), words({"a", "red", "circle", "to", "the", "left", "of", "a", "blue", "square"}),
      kGrid);
  // "on the right" is a region, not a relation; the star matches.
  add_shapes_caption(tally, objects(), words({"a", "red", "star", "on", "the", "right"}), kGrid);
  // No attribute stated: not a mention.
  add_shapes_caption(tally, objects(), words({"there", "are", "three", "shapes"}), kGrid);
  // "big" is "large": the large square matches.
  add_shapes_caption(tally, objects(), words({"a", "big", "square"}), kGrid);

  const ShapesScores scores = finish(tally);
  EXPECT_EQ(scores.pointing_words, 3);
  EXPECT_DOUBLE_EQ(scores.pointing_accuracy.value(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(scores.pointing_baseline.value(), (4.0 + 4.0 + 2.0) / 16.0 / 3.0);
  // By kind: the colour word "blue" hit; of the shape words, "square" missed and "star" hit.
  const auto color = static_cast<size_t>(PointingWordKind::color);
  const auto shape = static_cast<size_t>(PointingWordKind::shape);
  const auto size = static_cast<size_t>(PointingWordKind::size);
  EXPECT_EQ(scores.pointing_words_by_kind[color], 1);
  EXPECT_DOUBLE_EQ(scores.pointing_accuracy_by_kind[color].value(), 1.0);
  EXPECT_EQ(scores.pointing_words_by_kind[shape], 2);
  EXPECT_DOUBLE_EQ(scores.pointing_accuracy_by_kind[shape].value(), 0.5);
  EXPECT_EQ(scores.pointing_words_by_kind[size], 0);
  EXPECT_FALSE(scores.pointing_accuracy_by_kind[size].has_value());
  // Mentions: 2 (both match) + 2 (1) + 2 (2) + 1 (1) + 0 + 1 (1) = 8, 7 matched.
  EXPECT_EQ(scores.object_mentions, 8);
  EXPECT_DOUBLE_EQ(scores.content_accuracy.value(), 7.0 / 8.0);
  EXPECT_EQ(scores.relations, 2);
  EXPECT_DOUBLE_EQ(scores.relation_accuracy.value(), 0.5);
  // Objects named with colour and shape, of 3 per caption: 2 + 1 (one red circle exists) + 2 + 1
  // + 0 + 0 ("a big square" states no colour) = 6 of 18.
  EXPECT_EQ(scores.objects, 18);
  EXPECT_DOUBLE_EQ(scores.object_recall.value(), 6.0 / 18.0);
}

// Relations in images of two objects, apart, beside the side of the first object with the most
// room. Diagonal: circle [4,14)^2, square [40,54)^2; the circle's widest margins are its right
// (64 - 14 = 50) and its bottom (50), the tie going to "left" (circle left of square: 14 <= 40,
// holds); the square's are its left and top (40), "right" (square right of circle: holds). So
// the room relation holds 2 ways of 2. Column: the square [4,14) x [40,54) under the circle; the
// circle's widest margins are again its right and bottom (50), the tie going to "left", and the
// square's is its right (50): "left" holds neither way, 0 of 2.
TEST(ShapesMetrics, TwoObjectRelationsBesideTheFirstObjectsRoom) {
  const std::vector<ShapesObject> diagonal = {
      {"circle", "red", "small", 4, 4, 14, 14}, {"square", "blue", "small", 40, 40, 54, 54}};
  const std::vector<ShapesObject> column = {
      {"circle", "red", "small", 4, 4, 14, 14}, {"square", "blue", "small", 4, 40, 14, 54}};
  ShapesTally tally;
  add_shapes_caption(
      tally, diagonal, words({"a", "red", "circle", "to", "the", "left", "of", "a", "blue", "square"}),
      kGrid);
  add_shapes_caption(tally, column, words({"a", "red", "circle", "above", "a", "blue", "square"}), kGrid);
  add_shapes_caption(
      tally, column, words({"a", "blue", "square", "to", "the", "left", "of", "a", "red", "circle"}), kGrid);
  // Three objects: counted in the relations, not in the two-object split (circle above square: true).
  add_shapes_caption(tally, objects(), words({"a", "red", "circle", "above", "a", "blue", "square"}), kGrid);

  const ShapesScores scores = finish(tally);
  EXPECT_EQ(scores.relations, 4);
  EXPECT_DOUBLE_EQ(scores.relation_accuracy.value(), 3.0 / 4.0);
  EXPECT_EQ(scores.pair_relations, 3);
  EXPECT_DOUBLE_EQ(scores.pair_relation_accuracy.value(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(scores.pair_relation_room_baseline.value(), (1.0 + 0.0 + 0.0) / 3.0);
}

// "large" names the one large object (the blue square) and is scored as a size word: its peak
// (0, 0), centre (8, 8), misses the square; "square" peaks at (3, 3), centre (56, 56): a hit.
TEST(ShapesMetrics, SizeWordsPointApart) {
  ShapesTally tally;
  ShapesCaption caption = words({"a", "large", "square"});
  caption.alphas = {peak(1, 1), peak(0, 0), peak(3, 3)};
  add_shapes_caption(tally, objects(), caption, kGrid);
  const ShapesScores scores = finish(tally);
  EXPECT_EQ(scores.pointing_words, 2);
  EXPECT_DOUBLE_EQ(scores.pointing_accuracy.value(), 0.5);
  EXPECT_EQ(scores.pointing_words_by_kind[static_cast<size_t>(PointingWordKind::size)], 1);
  EXPECT_DOUBLE_EQ(
      scores.pointing_accuracy_by_kind[static_cast<size_t>(PointingWordKind::size)].value(), 0.0);
  EXPECT_DOUBLE_EQ(
      scores.pointing_accuracy_by_kind[static_cast<size_t>(PointingWordKind::shape)].value(), 1.0);
  EXPECT_FALSE(scores.pointing_accuracy_by_kind[static_cast<size_t>(PointingWordKind::color)].has_value());
}

TEST(ShapesMetrics, WrongColorDoesNotMatch) {
  ShapesTally tally;
  add_shapes_caption(tally, objects(), words({"a", "green", "circle", "below", "a", "red", "star"}), kGrid);
  const ShapesScores scores = finish(tally);
  EXPECT_DOUBLE_EQ(scores.content_accuracy.value(), 0.5);
  EXPECT_DOUBLE_EQ(scores.relation_accuracy.value(), 0.0);    // no green circle, so nothing can stand below
  EXPECT_DOUBLE_EQ(scores.object_recall.value(), 1.0 / 3.0);  // only the red star is named
}

// Saying little scores little: one true mention of three objects recalls a third, and naming an
// object twice names it once.
TEST(ShapesMetrics, ObjectRecallCountsEachObjectOnce) {
  ShapesTally tally;
  add_shapes_caption(tally, objects(), words({"a", "small", "red", "circle"}), kGrid);
  add_shapes_caption(
      tally, objects(), words({"a", "red", "circle", "and", "a", "small", "red", "circle"}), kGrid);
  add_shapes_caption(tally, objects(), words({"a", "large", "red", "circle"}), kGrid);  // wrong size
  const ShapesScores scores = finish(tally);
  EXPECT_EQ(scores.objects, 9);
  EXPECT_DOUBLE_EQ(scores.object_recall.value(), 2.0 / 9.0);
}

TEST(ShapesMetrics, EmptyTallyHasNoScoresNotZeros) {
  const ShapesScores scores = finish(ShapesTally{});
  EXPECT_EQ(scores.pointing_words, 0);
  EXPECT_FALSE(scores.pointing_accuracy.has_value());
  EXPECT_FALSE(scores.pointing_baseline.has_value());
  for (const auto& by_kind : scores.pointing_accuracy_by_kind) EXPECT_FALSE(by_kind.has_value());
  EXPECT_FALSE(scores.content_accuracy.has_value());
  EXPECT_FALSE(scores.relation_accuracy.has_value());
  EXPECT_FALSE(scores.pair_relation_accuracy.has_value());
  EXPECT_FALSE(scores.pair_relation_room_baseline.has_value());
  EXPECT_FALSE(scores.object_recall.has_value());
  EXPECT_EQ(
      describe(scores),
      "  pointing game      n/a  (random attention n/a, 0 words)\n"
      "  content accuracy   n/a  (0 object mentions)\n"
      "  object recall      n/a  (0 objects)\n"
      "  relation accuracy  n/a  (0 relations)\n"
      "  relation choice    n/a  (chance 0.5000, 0 pairs)\n");
}

TEST(ShapesMetrics, RelationProbesAreEveryTrueRelationAgainstItsSwap) {
  // Worked from the boxes: (circle, square) left and above; (circle, star) left; (square,
  // circle) right and below; (square, star) below; (star, circle) right; (star, square) above.
  const auto probes = relation_probes(objects());
  std::vector<std::string> stated, swapped;
  const auto join = [](const std::vector<std::string>& words) {
    std::string text;
    for (const auto& word : words) text += (text.empty() ? "" : " ") + word;
    return text;
  };
  for (const RelationProbe& probe : probes) {
    stated.push_back(join(probe.stated));
    swapped.push_back(join(probe.swapped));
  }
  EXPECT_EQ(
      stated, (std::vector<std::string>{
                  "a red circle to the left of a blue square", "a red circle above a blue square",
                  "a red circle to the left of a red star", "a blue square to the right of a red circle",
                  "a blue square below a red circle", "a blue square below a red star",
                  "a red star to the right of a red circle", "a red star above a blue square"}));
  EXPECT_EQ(swapped[0], "a blue square to the left of a red circle");
  EXPECT_EQ(swapped[5], "a red star below a blue square");
  // With a second red circle "a red circle" names two objects: only the square and the star,
  // each still unambiguous, are asked about.
  auto with_twin = objects();
  with_twin.push_back({"circle", "red", "large", 0, 40, 20, 60});
  std::vector<std::string> unambiguous;
  for (const RelationProbe& probe : relation_probes(with_twin)) unambiguous.push_back(join(probe.stated));
  EXPECT_EQ(
      unambiguous,
      (std::vector<std::string>{"a blue square below a red star", "a red star above a blue square"}));
}

TEST(ShapesMetrics, RelationChoiceCountsWinsAndHalfTies) {
  ShapesTally tally;
  add_relation_choice(tally, -3.0, -5.0);  // the true caption more probable: won
  add_relation_choice(tally, -4.0, -4.0);  // a tie: half
  add_relation_choice(tally, -6.0, -2.0);  // lost
  const ShapesScores scores = finish(tally);
  EXPECT_EQ(scores.relation_choices, 3);
  EXPECT_DOUBLE_EQ(scores.relation_choice_accuracy.value(), 1.5 / 3.0);
}

TEST(ShapesMetrics, RejectsMismatchedAttention) {
  ShapesTally tally;
  ShapesCaption caption = words({"a", "blue", "square"});
  caption.alphas = {peak(0, 0)};
  EXPECT_THROW(add_shapes_caption(tally, objects(), caption, kGrid), std::invalid_argument);
  caption.alphas = {peak(0, 0), std::vector<float>(3, 0.0f), peak(0, 0)};
  EXPECT_THROW(add_shapes_caption(tally, objects(), caption, kGrid), std::invalid_argument);
}

TEST(ShapesMetrics, DescribesTheScoresOnePerLine) {
  ShapesScores scores;
  scores.pointing_accuracy = 0.5927;
  scores.pointing_baseline = 0.0679;
  scores.pointing_words = 739;
  scores.pointing_accuracy_by_kind = {0.5, 0.75, std::nullopt};
  scores.pointing_words_by_kind = {400, 339, 0};
  scores.content_accuracy = 0.8;
  scores.object_mentions = 513;
  scores.object_recall = 0.25;
  scores.objects = 1000;
  scores.relation_accuracy = 2.0 / 7.0;
  scores.relations = 7;
  scores.pair_relation_accuracy = 0.5;
  scores.pair_relation_room_baseline = 0.25;
  scores.pair_relations = 4;
  scores.relation_choice_accuracy = 0.75;
  scores.relation_choices = 412;
  EXPECT_EQ(
      describe(scores),
      "  pointing game      0.5927  (random attention 0.0679, 739 words)\n"
      "    by word          color 0.5000 (400), shape 0.7500 (339), size n/a (0)\n"
      "  content accuracy   0.8000  (513 object mentions)\n"
      "  object recall      0.2500  (1000 objects)\n"
      "  relation accuracy  0.2857  (7 relations)\n"
      "    two objects      0.5000  (the first object's room alone 0.2500, 4 relations)\n"
      "  relation choice    0.7500  (chance 0.5000, 412 pairs)\n");
}

}  // namespace
}  // namespace saccade
