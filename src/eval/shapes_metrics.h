// Shapes-world metrics: does a generated caption say true things about its image, and does the
// attention look at the object a word names? Only possible because the shapes world knows every
// object's attributes and box (data/shapes_world.h). Torch-free: attention comes in as floats.
//
//   ShapesTally tally;
//   for (each test image) {
//     std::vector<ShapesObject> objects = ...;    // the truth, boxes in the model input's pixels
//     ShapesCaption caption{words, alphas};        // alphas[i]: word i's H*W attention, row-major
//     add_shapes_caption(tally, objects, caption, AttentionGrid{8, 8, 64, 64});
//   }
//   ShapesScores scores = finish(tally);   // scores.pointing_accuracy, scores.content_accuracy ...
//
// The four metrics, each a ratio over the whole split (sums of numerators over sums of
// denominators, so images with more evidence weigh more):
//  - Pointing game (Zhang et al. 2016, applied per word): for each generated word that names
//    exactly one object of the image (a color, shape or size word - "big" counts as "large" -
//    that exactly one object has; ambiguous and non-content words are skipped), a hit when the
//    centre of the word's attention peak cell (argmax over the H x W grid) lies inside that
//    object's box. The random-attention baseline is the expected hit rate of a uniformly random
//    cell: the fraction of cell centres inside the box, averaged over the same words. The same
//    game is also scored apart for colour, shape and size words: a decoder may look at the
//    object for one kind of word and beside it for another.
//  - Content accuracy: the caption's object mentions - "[a|one|two|...] [size] [color] shape"
//    with a shape name, its plural, or "shapes" (any shape) - each matched to a distinct,
//    still-unmatched object having every attribute stated; a mention of n objects ("two red
//    circles") needs n objects (duplicates counted). Mentions stating no attribute ("three
//    shapes") are not counted. Accuracy = matched object mentions / object mentions.
//  - Object recall: the share of the image's objects that the caption names, each object once,
//    by a mention stating its colour and its shape (and nothing false): a caption naming one of
//    three objects scores 1/3 however true it is, so saying little is not rewarded.
//  - Relation accuracy: "A to the left of B", "A to the right of B", "A above B", "A below B"
//    between two mentions; true when some object matching A and a different one matching B
//    stand in that relation, with the generator's definition on boxes [x0, x1) x [y0, y1):
//    left: A.x1 <= B.x0; right: B.x1 <= A.x0; above: A.y1 <= B.y0; below: B.y1 <= A.y0.
//    Also scored apart for images of exactly two objects, beside what the first object's
//    position alone would state there: the relation toward the side of A with the most room
//    ("A left of B" when the widest free margin is A's right one), averaged over the image's two
//    orderings. A decoder that states no more than that baseline decides its relations without
//    looking at the second object.
// And one that does not depend on what the model chooses to say:
//  - Relation choice (a forced choice): for each true relation between two objects that their
//    colour and shape name unambiguously, the model's log-probability of the caption stating it ("a red
//    circle to the left of a blue square") against the same caption with the objects swapped ("a blue square
//    to the left of a red circle"). Accuracy = the share where the true one is more probable (a tie counts a
//    half); chance is 0.5.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace saccade {

// One object of an image: attributes as the generator names them, box in pixels of the image
// the attention grid covers, [x0, x1) x [y0, y1).
struct ShapesObject {
  std::string shape;  // circle | square | triangle | diamond | star
  std::string color;  // red | green | blue | yellow | purple | orange
  std::string size;   // small | large
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};

// A generated caption and, for the pointing game, where each word looked.
struct ShapesCaption {
  std::vector<std::string> words;
  // alphas[i]: word i's attention over the grid, H*W values row-major (cell (r, c) at r*W + c).
  // Empty = no attention available (the pointing game skips the caption).
  std::vector<std::vector<float>> alphas;
};

// The attention grid and the pixel size of the image it covers (cells tile it evenly).
struct AttentionGrid {
  int64_t height = 0;  // H cells
  int64_t width = 0;   // W cells
  float image_height = 0;
  float image_width = 0;
};

// The kinds of word the pointing game scores, in this order in the per-kind arrays below.
enum class PointingWordKind { color, shape, size };
constexpr size_t kPointingWordKinds = 3;
const char* to_string(PointingWordKind kind);  // "color" | "shape" | "size"

// Running counts over a split.
struct ShapesTally {
  int64_t pointing_words = 0;    // words naming exactly one object, with attention
  int64_t pointing_hits = 0;     // ... whose attention peak lies in the object's box
  double pointing_baseline = 0;  // sum over those words of the random cell's hit chance
  // pointing_words and pointing_hits split by PointingWordKind.
  std::array<int64_t, kPointingWordKinds> pointing_words_by_kind{};
  std::array<int64_t, kPointingWordKinds> pointing_hits_by_kind{};
  int64_t object_mentions = 0;      // objects the captions mention (a mention of n counts n)
  int64_t objects_matched = 0;      // ... matched to distinct objects with the stated attributes
  int64_t objects = 0;              // objects of the images, once per caption
  int64_t objects_named = 0;        // ... that the caption names with their colour and shape
  int64_t relations = 0;            // relations stated
  int64_t relations_true = 0;       // ... that hold
  int64_t pair_relations = 0;       // relations stated in images of exactly two objects
  int64_t pair_relations_true = 0;  // ... that hold
  double pair_relations_room = 0;   // sum over those of the room baseline's hit rate in the image
  int64_t relation_choices = 0;     // forced choices between a true relation and its swap
  double relation_choices_won = 0;  // ... where the true one was more probable (ties: 1/2)
};

// The chance level of the forced choice.
constexpr double kRelationChoiceChance = 0.5;

// Ratios of a tally; a ratio whose denominator is 0 cannot be computed and is std::nullopt
// (printed and written as n/a or null, never as 0).
struct ShapesScores {
  std::optional<double> pointing_accuracy;
  std::optional<double> pointing_baseline;  // the random-attention baseline's expected accuracy
  int64_t pointing_words = 0;
  std::array<std::optional<double>, kPointingWordKinds> pointing_accuracy_by_kind;  // by PointingWordKind
  std::array<int64_t, kPointingWordKinds> pointing_words_by_kind{};
  std::optional<double> content_accuracy;
  int64_t object_mentions = 0;
  std::optional<double> object_recall;
  int64_t objects = 0;
  std::optional<double> relation_accuracy;
  int64_t relations = 0;
  std::optional<double> pair_relation_accuracy;       // in images of exactly two objects
  std::optional<double> pair_relation_room_baseline;  // the first object's room alone, same relations
  int64_t pair_relations = 0;
  std::optional<double> relation_choice_accuracy;
  int64_t relation_choices = 0;
};

// A forced choice: the caption stating a true relation, and the same with the objects swapped.
struct RelationProbe {
  std::vector<std::string> stated;   // "a red circle to the left of a blue square"
  std::vector<std::string> swapped;  // "a blue square to the left of a red circle"
};

// The image's probes: for each ordered pair of objects whose colour and shape no other object of
// the image shares (so "a red circle" names one object), one per relation (left, right, above,
// below) that holds from the first to the second, in that order. Each true relation is asked
// both ways round ("A left of B" and "B right of A"), so a model that ignores where objects are
// and only prefers naming one of them first scores exactly the chance level.
std::vector<RelationProbe> relation_probes(const std::vector<ShapesObject>& objects);

// Adds the outcome of one probe from the model's log-probabilities of its two captions.
void add_relation_choice(ShapesTally& tally, double stated_log_prob, double swapped_log_prob);

// Adds one caption of one image. Throws std::invalid_argument when alphas is non-empty but does
// not hold one H*W row per word, or the grid is empty.
void add_shapes_caption(
    ShapesTally& tally,
    const std::vector<ShapesObject>& objects,
    const ShapesCaption& caption,
    const AttentionGrid& grid);

ShapesScores finish(const ShapesTally& tally);

// The scores as indented lines for a printout ("  pointing game      0.5927  (random attention
// 0.0679, 739 words)", the pointing game by kind of word when any word was scored, then the
// other four), numbers with 4 decimals, n/a where there is none.
std::string describe(const ShapesScores& scores);
// The same on one line, for a log: "pointing 0.8520, content 0.9770, recall 0.9770, relations
// 0.5576 (330), relation choice 0.6000".
std::string summarize(const ShapesScores& scores);

}  // namespace saccade
