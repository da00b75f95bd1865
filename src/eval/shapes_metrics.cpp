// Shapes-world metrics: caption parsing into mentions and relations, the per-word pointing game.
#include "eval/shapes_metrics.h"

#include <algorithm>
#include <array>
#include <iomanip>
#include <sstream>
#include <stdexcept>

namespace saccade {
namespace {

const std::array<const char*, 5> kShapes = {"circle", "square", "triangle", "diamond", "star"};
const std::array<const char*, 6> kColors = {"red", "green", "blue", "yellow", "purple", "orange"};
const std::array<const char*, 9> kCounts = {"one", "two",   "three", "four", "five",
                                            "six", "seven", "eight", "nine"};

template <size_t N>
bool is_one_of(const std::string& word, const std::array<const char*, N>& names) {
  return std::find(names.begin(), names.end(), word) != names.end();
}

// "big" and "large" name the same size.
std::string size_of(const std::string& word) {
  if (word == "small") return "small";
  if (word == "large" || word == "big") return "large";
  return "";
}

// An object mention: the attributes stated (empty = not stated) and how many objects it names.
struct Mention {
  std::string shape, color, size;
  int64_t count = 1;
  bool matches(const ShapesObject& object) const {
    return (shape.empty() || shape == object.shape) && (color.empty() || color == object.color) &&
           (size.empty() || size == object.size);
  }
};

// The caption's mentions, in order, with the index of the mention each relation's words follow:
// relation r holds between mentions[first[r]] and mentions[first[r] + 1].
struct Parsed {
  std::vector<Mention> mentions;
  std::vector<std::string> relations;  // left | right | above | below
  std::vector<size_t> relation_first;
};

Parsed parse(const std::vector<std::string>& words) {
  Parsed parsed;
  Mention current;
  bool open = false;  // attribute or count words seen since the last noun
  std::string pending_relation;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    const auto count = std::find(kCounts.begin(), kCounts.end(), word);
    if (count != kCounts.end()) {
      current.count = (count - kCounts.begin()) + 1;
      open = true;
    } else if (!size_of(word).empty()) {
      current.size = size_of(word);
      open = true;
    } else if (is_one_of(word, kColors)) {
      current.color = word;
      open = true;
    } else if (
        is_one_of(word, kShapes) || word == "shapes" ||
        (word.size() > 1 && word.back() == 's' && is_one_of(word.substr(0, word.size() - 1), kShapes))) {
      if (word != "shapes") current.shape = word.back() == 's' ? word.substr(0, word.size() - 1) : word;
      if (!pending_relation.empty() && !parsed.mentions.empty()) {
        parsed.relations.push_back(pending_relation);
        parsed.relation_first.push_back(parsed.mentions.size() - 1);
      }
      pending_relation.clear();
      parsed.mentions.push_back(current);
      current = Mention{};
      open = false;
    } else if (!open && (word == "above" || word == "below")) {
      pending_relation = word;
    } else if (!open && (word == "left" || word == "right") && i + 1 < words.size() && words[i + 1] == "of") {
      pending_relation = word;  // "to the left of"; "on the left" (a region) is not a relation
    }
  }
  return parsed;
}

const std::array<const char*, 4> kRelations = {"left", "right", "above", "below"};

bool relation_holds(const std::string& relation, const ShapesObject& a, const ShapesObject& b) {
  if (relation == "left") return a.x1 <= b.x0;
  if (relation == "right") return b.x1 <= a.x0;
  if (relation == "above") return a.y1 <= b.y0;
  return b.y1 <= a.y0;  // below
}

// The relation of `a` toward its side with the most free room in an image of `width` x `height`
// (ties in kRelations' order): where another object most likely stands, judged from `a` alone.
const char* roomiest_relation(const ShapesObject& a, float width, float height) {
  const std::array<float, 4> room = {width - a.x1, a.x0, height - a.y1, a.y0};  // kRelations' order
  return kRelations[static_cast<size_t>(std::max_element(room.begin(), room.end()) - room.begin())];
}

// The share of a two-object image's ordered pairs (A, B) whose room relation of A holds toward B.
double room_baseline(const std::vector<ShapesObject>& objects, const AttentionGrid& grid) {
  double hits = 0;
  for (size_t a = 0; a < 2; ++a) {
    const ShapesObject& first = objects[a];
    hits +=
        relation_holds(roomiest_relation(first, grid.image_width, grid.image_height), first, objects[1 - a]);
  }
  return hits / 2;
}

// Relation accuracy: each stated relation, true when some object matching its first mention and
// a different one matching its second stand in it; images of two objects also apart.
void add_relations(
    ShapesTally& tally,
    const std::vector<ShapesObject>& objects,
    const Parsed& parsed,
    const AttentionGrid& grid) {
  for (size_t r = 0; r < parsed.relations.size(); ++r) {
    const Mention& a = parsed.mentions[parsed.relation_first[r]];
    const Mention& b = parsed.mentions[parsed.relation_first[r] + 1];
    bool holds = false;
    for (size_t i = 0; i < objects.size() && !holds; ++i) {
      for (size_t j = 0; j < objects.size() && !holds; ++j) {
        holds = i != j && a.matches(objects[i]) && b.matches(objects[j]) &&
                relation_holds(parsed.relations[r], objects[i], objects[j]);
      }
    }
    ++tally.relations;
    tally.relations_true += holds;
    if (objects.size() != 2) continue;
    ++tally.pair_relations;
    tally.pair_relations_true += holds;
    tally.pair_relations_room += room_baseline(objects, grid);
  }
}

// "a <color> <shape> <relation words> a <color> <shape>", as the generator words it.
std::vector<std::string> relation_caption(
    const ShapesObject& a, const std::string& relation, const ShapesObject& b) {
  std::vector<std::string> words = {"a", a.color, a.shape};
  if (relation == "left" || relation == "right") {
    words.insert(words.end(), {"to", "the", relation, "of"});
  } else {
    words.push_back(relation);
  }
  words.insert(words.end(), {"a", b.color, b.shape});
  return words;
}

// The one object having attribute `word`, or -1 (no content word, or ambiguous). `kind` is set to
// what the word names when it names one object.
int named_object(const std::string& word, const std::vector<ShapesObject>& objects, PointingWordKind& kind) {
  std::string shape = is_one_of(word, kShapes) ? word : "";
  if (word.size() > 1 && word.back() == 's' && is_one_of(word.substr(0, word.size() - 1), kShapes))
    shape = word.substr(0, word.size() - 1);
  const std::string color = is_one_of(word, kColors) ? word : "";
  const std::string size = size_of(word);
  if (shape.empty() && color.empty() && size.empty()) return -1;
  kind = !color.empty()   ? PointingWordKind::color
         : !shape.empty() ? PointingWordKind::shape
                          : PointingWordKind::size;
  int found = -1;
  for (size_t k = 0; k < objects.size(); ++k) {
    const ShapesObject& object = objects[k];
    if (object.shape == shape || object.color == color || object.size == size) {
      if (found >= 0) return -1;
      found = static_cast<int>(k);
    }
  }
  return found;
}

// The pointing game's counts for the caption's words that name one object (grid already checked).
void add_pointing(
    ShapesTally& tally,
    const std::vector<ShapesObject>& objects,
    const ShapesCaption& caption,
    const AttentionGrid& grid) {
  const int64_t cells = grid.height * grid.width;
  const float cell_h = grid.image_height / static_cast<float>(grid.height);
  const float cell_w = grid.image_width / static_cast<float>(grid.width);
  auto centre_inside = [&](int64_t cell, const ShapesObject& object) {
    const float y = (static_cast<float>(cell / grid.width) + 0.5f) * cell_h;
    const float x = (static_cast<float>(cell % grid.width) + 0.5f) * cell_w;
    return x >= object.x0 && x < object.x1 && y >= object.y0 && y < object.y1;
  };

  for (size_t i = 0; i < caption.alphas.size(); ++i) {
    PointingWordKind kind{};
    const int k = named_object(caption.words[i], objects, kind);
    if (k < 0) continue;
    const std::vector<float>& alpha = caption.alphas[i];
    if (static_cast<int64_t>(alpha.size()) != cells) {
      throw std::invalid_argument(
          "Expected " + std::to_string(cells) + " attention weights per word, got " +
          std::to_string(alpha.size()));
    }
    const int64_t peak = std::max_element(alpha.begin(), alpha.end()) - alpha.begin();
    int64_t covered = 0;
    for (int64_t cell = 0; cell < cells; ++cell) covered += centre_inside(cell, objects[k]);
    const bool hit = centre_inside(peak, objects[k]);
    ++tally.pointing_words;
    tally.pointing_hits += hit;
    ++tally.pointing_words_by_kind[static_cast<size_t>(kind)];
    tally.pointing_hits_by_kind[static_cast<size_t>(kind)] += hit;
    tally.pointing_baseline += static_cast<double>(covered) / static_cast<double>(cells);
  }
}

}  // namespace

void add_shapes_caption(
    ShapesTally& tally,
    const std::vector<ShapesObject>& objects,
    const ShapesCaption& caption,
    const AttentionGrid& grid) {
  const int64_t cells = grid.height * grid.width;
  if (cells <= 0 || grid.image_height <= 0 || grid.image_width <= 0) {
    throw std::invalid_argument("The attention grid and its image must be non-empty");
  }
  if (!caption.alphas.empty() && caption.alphas.size() != caption.words.size()) {
    throw std::invalid_argument(
        "Expected one attention map per word (" + std::to_string(caption.words.size()) + "), got " +
        std::to_string(caption.alphas.size()));
  }
  add_pointing(tally, objects, caption, grid);

  const Parsed parsed = parse(caption.words);
  std::vector<char> used(objects.size(), 0);
  for (const Mention& mention : parsed.mentions) {
    if (mention.shape.empty() && mention.color.empty() && mention.size.empty()) continue;
    tally.object_mentions += mention.count;
    for (int64_t n = 0; n < mention.count; ++n) {
      for (size_t k = 0; k < objects.size(); ++k) {
        if (used[k] || !mention.matches(objects[k])) continue;
        used[k] = 1;
        ++tally.objects_matched;
        break;
      }
    }
  }
  // Object recall: each object named, once, by a mention stating its colour and shape.
  std::vector<char> named(objects.size(), 0);
  for (const Mention& mention : parsed.mentions) {
    if (mention.shape.empty() || mention.color.empty()) continue;
    int64_t unnamed = mention.count;
    for (size_t k = 0; k < objects.size() && unnamed > 0; ++k) {
      if (named[k] || !mention.matches(objects[k])) continue;
      named[k] = 1;
      --unnamed;
    }
  }
  tally.objects += static_cast<int64_t>(objects.size());
  tally.objects_named += std::count(named.begin(), named.end(), 1);
  add_relations(tally, objects, parsed, grid);
}

std::vector<RelationProbe> relation_probes(const std::vector<ShapesObject>& objects) {
  // "a red circle" must name one object: with two red circles the swap may be true as well.
  const auto unique = [&](const ShapesObject& object) {
    return std::count_if(objects.begin(), objects.end(), [&](const ShapesObject& other) {
             return other.color == object.color && other.shape == object.shape;
           }) == 1;
  };
  std::vector<RelationProbe> probes;
  for (const ShapesObject& a : objects) {
    for (const ShapesObject& b : objects) {
      if (&a == &b || !unique(a) || !unique(b)) continue;
      for (const char* relation : kRelations) {
        if (relation_holds(relation, a, b))
          probes.push_back({relation_caption(a, relation, b), relation_caption(b, relation, a)});
      }
    }
  }
  return probes;
}

void add_relation_choice(ShapesTally& tally, double stated_log_prob, double swapped_log_prob) {
  ++tally.relation_choices;
  tally.relation_choices_won += stated_log_prob > swapped_log_prob    ? 1.0
                                : stated_log_prob == swapped_log_prob ? 0.5
                                                                      : 0.0;
}

const char* to_string(PointingWordKind kind) {
  constexpr std::array<const char*, kPointingWordKinds> kNames = {"color", "shape", "size"};
  return kNames[static_cast<size_t>(kind)];
}

ShapesScores finish(const ShapesTally& tally) {
  auto ratio = [](double numerator, int64_t denominator) -> std::optional<double> {
    if (denominator == 0) return std::nullopt;
    return numerator / static_cast<double>(denominator);
  };
  ShapesScores scores;
  scores.pointing_words = tally.pointing_words;
  scores.pointing_accuracy = ratio(static_cast<double>(tally.pointing_hits), tally.pointing_words);
  scores.pointing_baseline = ratio(tally.pointing_baseline, tally.pointing_words);
  for (size_t kind = 0; kind < kPointingWordKinds; ++kind) {
    scores.pointing_words_by_kind[kind] = tally.pointing_words_by_kind[kind];
    scores.pointing_accuracy_by_kind[kind] =
        ratio(static_cast<double>(tally.pointing_hits_by_kind[kind]), tally.pointing_words_by_kind[kind]);
  }
  scores.object_mentions = tally.object_mentions;
  scores.content_accuracy = ratio(static_cast<double>(tally.objects_matched), tally.object_mentions);
  scores.objects = tally.objects;
  scores.object_recall = ratio(static_cast<double>(tally.objects_named), tally.objects);
  scores.relations = tally.relations;
  scores.relation_accuracy = ratio(static_cast<double>(tally.relations_true), tally.relations);
  scores.pair_relations = tally.pair_relations;
  scores.pair_relation_accuracy = ratio(static_cast<double>(tally.pair_relations_true), tally.pair_relations);
  scores.pair_relation_room_baseline = ratio(tally.pair_relations_room, tally.pair_relations);
  scores.relation_choices = tally.relation_choices;
  scores.relation_choice_accuracy = ratio(tally.relation_choices_won, tally.relation_choices);
  return scores;
}

namespace {

std::string number(const std::optional<double>& value) {
  if (!value) return "n/a";
  std::ostringstream text;
  text << std::fixed << std::setprecision(4) << *value;
  return text.str();
}

}  // namespace

std::string describe(const ShapesScores& scores) {
  // The split by kind of word only where some word was scored (none without attention).
  std::string by_kind;
  for (size_t kind = 0; kind < kPointingWordKinds && scores.pointing_words > 0; ++kind) {
    by_kind += std::string(kind == 0 ? "    by word          " : ", ") +
               to_string(static_cast<PointingWordKind>(kind)) + " " +
               number(scores.pointing_accuracy_by_kind[kind]) + " (" +
               std::to_string(scores.pointing_words_by_kind[kind]) + ")" +
               (kind + 1 == kPointingWordKinds ? "\n" : "");
  }
  // The two-object split only where such an image stated a relation.
  const std::string pairs = scores.pair_relations == 0
                                ? std::string()
                                : "    two objects      " + number(scores.pair_relation_accuracy) +
                                      "  (the first object's room alone " +
                                      number(scores.pair_relation_room_baseline) + ", " +
                                      std::to_string(scores.pair_relations) + " relations)\n";
  return "  pointing game      " + number(scores.pointing_accuracy) + "  (random attention " +
         number(scores.pointing_baseline) + ", " + std::to_string(scores.pointing_words) + " words)\n" +
         by_kind + "  content accuracy   " + number(scores.content_accuracy) + "  (" +
         std::to_string(scores.object_mentions) + " object mentions)\n" + "  object recall      " +
         number(scores.object_recall) + "  (" + std::to_string(scores.objects) + " objects)\n" +
         "  relation accuracy  " + number(scores.relation_accuracy) + "  (" +
         std::to_string(scores.relations) + " relations)\n" + pairs + "  relation choice    " +
         number(scores.relation_choice_accuracy) + "  (chance " + number(kRelationChoiceChance) + ", " +
         std::to_string(scores.relation_choices) + " pairs)\n";
}

std::string summarize(const ShapesScores& scores) {
  return "pointing " + number(scores.pointing_accuracy) + ", content " + number(scores.content_accuracy) +
         ", recall " + number(scores.object_recall) + ", relations " + number(scores.relation_accuracy) +
         " (" + std::to_string(scores.relations) + "), relation choice " +
         number(scores.relation_choice_accuracy);
}

}  // namespace saccade
