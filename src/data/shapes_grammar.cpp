// The shapes caption grammar: descriptions, regions, relations, the varied and complete styles.
#include "data/shapes_grammar.h"

#include <string>
#include <utility>
#include <vector>

#include "data/shapes_world.h"

namespace saccade::shapes_detail {
namespace {

const char* const kNumbers[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight"};

// "[size] [color] shape" for object k; at least the shape, often the color, sometimes the size.
Phrase describe(const std::vector<Object>& objects, int k, Rng& rng) {
  const Object& object = objects[static_cast<size_t>(k)];
  Phrase phrase;
  if (rng.bernoulli(0.4)) phrase.add(object.large ? (rng.bernoulli(0.5) ? "large" : "big") : "small", {k});
  if (rng.bernoulli(0.85)) phrase.add(kColorNames[object.color], {k});
  phrase.add(kShapeNames[object.shape], {k});
  return phrase;
}

// Where an object sits: "in the top left", "at the bottom", "on the right", "in the middle".
Phrase region(const Object& object, int size) {
  const char* vertical = object.cy() < size / 3 ? "top" : object.cy() >= size - size / 3 ? "bottom" : nullptr;
  const char* horizontal = object.cx() < size / 3           ? "left"
                           : object.cx() >= size - size / 3 ? "right"
                                                            : nullptr;
  Phrase phrase;
  if (vertical != nullptr && horizontal != nullptr) {
    for (const char* word : {"in", "the", vertical, horizontal}) phrase.add(word);
  } else if (vertical != nullptr) {
    for (const char* word : {"at", "the", vertical}) phrase.add(word);
  } else if (horizontal != nullptr) {
    for (const char* word : {"on", "the", horizontal}) phrase.add(word);
  } else {
    for (const char* word : {"in", "the", "middle"}) phrase.add(word);
  }
  return phrase;
}

// A true spatial relation of object a to object b ("to the left of", "above", ...), chosen at
// random among those that hold; boxes never overlap, so at least one does.
Phrase relation(const Object& a, const Object& b, Rng& rng) {
  std::vector<std::vector<const char*>> holds;
  if (a.x0 + a.extent <= b.x0) holds.push_back({"to", "the", "left", "of"});
  if (b.x0 + b.extent <= a.x0) holds.push_back({"to", "the", "right", "of"});
  if (a.y0 + a.extent <= b.y0) holds.push_back({"above"});
  if (b.y0 + b.extent <= a.y0) holds.push_back({"below"});
  Phrase phrase;
  for (const char* word :
       holds[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(holds.size()) - 1))]) {
    phrase.add(word);
  }
  return phrase;
}

// 0 .. n-1 in random order (Fisher-Yates).
std::vector<int> shuffled_indices(int n, Rng& rng) {
  std::vector<int> order(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) order[k] = k;
  for (int i = n - 1; i > 0; --i) std::swap(order[i], order[static_cast<size_t>(rng.uniform_int(0, i))]);
  return order;
}

// "[size] color shape": what object recall needs, the size now and then.
Phrase describe_fully(const std::vector<Object>& objects, int k, Rng& rng) {
  const Object& object = objects[static_cast<size_t>(k)];
  Phrase phrase;
  if (rng.bernoulli(0.3)) phrase.add(object.large ? (rng.bernoulli(0.5) ? "large" : "big") : "small", {k});
  phrase.add(kColorNames[object.color], {k});
  phrase.add(kShapeNames[object.shape], {k});
  return phrase;
}

// "a red circle , a blue square and a green star": every object, in random order.
Phrase object_list(const std::vector<Object>& objects, Rng& rng) {
  const int n = static_cast<int>(objects.size());
  const std::vector<int> order = shuffled_indices(n, rng);
  Phrase caption;
  for (int i = 0; i < n; ++i) {
    if (i > 0) caption.add(i == n - 1 ? "and" : ",");
    caption.add("a");
    caption.add(describe(objects, order[i], rng));
  }
  return caption;
}

// "[there is] a red circle to the left of a blue square": two different objects, `a` drawn first.
Phrase related_pair(const std::vector<Object>& objects, int a, Rng& rng) {
  const int n = static_cast<int>(objects.size());
  int b = static_cast<int>(rng.uniform_int(0, n - 2));
  if (b >= a) ++b;
  Phrase caption;
  if (rng.bernoulli(0.5)) {
    for (const char* word : {"there", "is"}) caption.add(word);
  }
  caption.add("a");
  caption.add(describe(objects, a, rng));
  caption.add(relation(objects[a], objects[b], rng));
  caption.add("a");
  caption.add(describe(objects, b, rng));
  return caption;
}

// "[there are] two green triangles": the objects `twins` that share the first one's colour and shape.
Phrase twins_count(const std::vector<Object>& objects, const std::vector<int>& twins, Rng& rng) {
  Phrase caption;
  if (rng.bernoulli(0.5)) {
    for (const char* word : {"there", "are"}) caption.add(word);
  }
  caption.add(kNumbers[twins.size()]);
  caption.add(kColorNames[objects[0].color], twins);
  caption.add(std::string(kShapeNames[objects[0].shape]) + "s", twins);
  return caption;
}

// The varied grammar's templates, in the order a scene's list of them is built.
enum class Template {
  object,         // a red circle
  there_is,       // there is a red circle
  on_background,  // a red circle on a gray background
  in_region,      // a red circle in the top left
  single,         // a single red circle, only one red circle
  list,           // a red circle , a blue square and a green star
  relation,       // [there is] a red circle to the left of a blue square
  count,          // there are three shapes [including a red circle]
  twins,          // [there are] two green triangles
  same_color,     // two red shapes
};

// The templates a scene allows, each as often as its weight: relations four times, a count of
// twins twice. `same_color` and `twins` are the objects sharing the first one's colour, and its
// colour and shape.
std::vector<Template> templates_for(int n, size_t same_color, size_t twins) {
  using T = Template;
  std::vector<Template> templates = {T::object, T::there_is, T::on_background, T::in_region};
  if (n == 1) templates.push_back(T::single);
  if (n >= 2)
    templates.insert(
        templates.end(), {T::list, T::relation, T::relation, T::relation, T::relation, T::count});
  if (twins >= 2) templates.insert(templates.end(), {T::twins, T::twins});
  if (same_color >= 2 && same_color > twins) templates.push_back(T::same_color);
  return templates;
}

}  // namespace

Phrase complete_caption(const std::vector<Object>& objects, int size, Rng& rng) {
  const int n = static_cast<int>(objects.size());
  const std::vector<int> order = shuffled_indices(n, rng);
  Phrase caption;
  if (n < 3 && rng.bernoulli(0.5)) {
    for (const char* word : {"there", "is"}) caption.add(word);
  }
  caption.add("a");
  if (n == 1 && rng.bernoulli(0.5)) caption.add("single");
  caption.add(describe_fully(objects, order[0], rng));
  if (n == 1) {
    caption.add(region(objects[order[0]], size));
    return caption;
  }
  caption.add(relation(objects[order[0]], objects[order[1]], rng));
  caption.add("a");
  caption.add(describe_fully(objects, order[1], rng));
  if (n == 3) {
    for (const char* word : {"and", "a"}) caption.add(word);
    caption.add(describe_fully(objects, order[2], rng));
    caption.add(region(objects[order[2]], size));
  }
  return caption;
}

Phrase sample_caption(const std::vector<Object>& objects, int size, Rng& rng) {
  const int n = static_cast<int>(objects.size());
  auto any_object = [&] { return static_cast<int>(rng.uniform_int(0, n - 1)); };
  std::vector<int> same_color;
  std::vector<int> twins;
  for (int k = 0; k < n; ++k) {
    if (objects[k].color == objects[0].color) same_color.push_back(k);
    if (objects[k].color == objects[0].color && objects[k].shape == objects[0].shape) twins.push_back(k);
  }
  const std::vector<Template> templates = templates_for(n, same_color.size(), twins.size());
  Phrase caption;
  switch (templates[static_cast<size_t>(rng.uniform_int(0, static_cast<int64_t>(templates.size()) - 1))]) {
    case Template::object:
      caption.add("a");
      caption.add(describe(objects, any_object(), rng));
      break;
    case Template::there_is:
      for (const char* word : {"there", "is", "a"}) caption.add(word);
      caption.add(describe(objects, any_object(), rng));
      break;
    case Template::on_background:
      caption.add("a");
      caption.add(describe(objects, any_object(), rng));
      for (const char* word : {"on", "a", "gray", "background"}) caption.add(word);
      break;
    case Template::in_region: {
      const int k = any_object();
      caption.add("a");
      caption.add(describe(objects, k, rng));
      caption.add(region(objects[k], size));
      break;
    }
    case Template::single: {
      const bool single = rng.bernoulli(0.5);
      caption.add(single ? "a" : "only");
      caption.add(single ? "single" : "one");
      caption.add(describe(objects, 0, rng));
      break;
    }
    case Template::list:
      return object_list(objects, rng);
    case Template::relation:
      return related_pair(objects, any_object(), rng);
    case Template::count:
      for (const char* word : {"there", "are", kNumbers[n], "shapes"}) caption.add(word);
      if (rng.bernoulli(0.5)) {
        for (const char* word : {"including", "a"}) caption.add(word);
        caption.add(describe(objects, any_object(), rng));
      }
      break;
    case Template::twins:
      return twins_count(objects, twins, rng);
    case Template::same_color:
      caption.add(kNumbers[same_color.size()]);
      caption.add(kColorNames[objects[0].color], same_color);
      caption.add("shapes");
  }
  return caption;
}

std::string raw_text(const Phrase& phrase) {
  std::string raw;
  for (const auto& word : phrase.words) {
    if (word != "," && !raw.empty()) raw += ' ';
    raw += word;
  }
  raw[0] = static_cast<char>(raw[0] - 'a' + 'A');
  return raw + ".";
}

ShapesCaptionTruth caption_truth(const Phrase& phrase) {
  ShapesCaptionTruth truth;
  for (size_t i = 0; i < phrase.words.size(); ++i) {
    if (phrase.words[i] == ",") continue;
    truth.words.push_back(phrase.words[i]);
    truth.objects.push_back(phrase.objects[i]);
  }
  return truth;
}

}  // namespace saccade::shapes_detail
