// The shapes world: scene sampling, drawing, the caption grammar, and its files on disk.
#include "data/shapes_world.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <opencv2/core.hpp>
#include <opencv2/imgproc.hpp>
#include <set>
#include <stdexcept>

#include "base/text.h"
#include "data/parallel.h"
#include "data/rng.h"
#include "data/vocabulary.h"
#include "io/log.h"
#include "io/temporaries.h"

namespace saccade {
namespace {

// Bump when the generator changes what it draws or writes, so old worlds are regenerated.
constexpr int kGeneratorVersion = 1;

const char* const kShapeNames[] = {"circle", "square", "triangle", "diamond", "star"};
const char* const kColorNames[] = {"red", "green", "blue", "yellow", "purple", "orange"};
const uint8_t kColorValues[][3] = {{220, 40, 40},  {50, 180, 70},  {40, 90, 230},
                                   {235, 205, 40}, {150, 60, 200}, {245, 130, 30}};
const char* const kNumbers[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight"};
constexpr int kShapeCount = 5;
constexpr int kColorCount = 6;
constexpr int kMargin = 2;  // pixels kept free between two objects

// A star's 10 vertices on the unit circle (outer radius 1, inner 0.45), clockwise from the top.
const float kStar[10][2] = {
    {0.0f, -1.0f}, {0.2645f, -0.3641f}, {0.9511f, -0.3090f}, {0.4280f, 0.1391f},   {0.5878f, 0.8090f},
    {0.0f, 0.45f}, {-0.5878f, 0.8090f}, {-0.4280f, 0.1391f}, {-0.9511f, -0.3090f}, {-0.2645f, -0.3641f}};

struct Object {
  int shape = 0;
  int color = 0;
  bool large = false;
  int x0 = 0;  // box [x0, x0 + extent) x [y0, y0 + extent)
  int y0 = 0;
  int extent = 0;
  int cx() const { return x0 + extent / 2; }
  int cy() const { return y0 + extent / 2; }
};

// A caption under construction: words with the objects each refers to; "," is punctuation for
// the raw text only.
struct Phrase {
  std::vector<std::string> words;
  std::vector<std::vector<int>> objects;
  void add(const std::string& word, std::vector<int> refs = {}) {
    words.push_back(word);
    objects.push_back(std::move(refs));
  }
  void add(const Phrase& other) {
    words.insert(words.end(), other.words.begin(), other.words.end());
    objects.insert(objects.end(), other.objects.begin(), other.objects.end());
  }
};

std::vector<Object> place_objects(const ShapesWorldOptions& options, Rng& rng) {
  const int size = options.image_size;
  const int count = static_cast<int>(rng.uniform_int(options.min_objects, options.max_objects));
  std::vector<Object> objects;
  for (int k = 0; k < count; ++k) {
    Object object;
    object.shape = static_cast<int>(rng.uniform_int(0, kShapeCount - 1));
    object.color = static_cast<int>(rng.uniform_int(0, kColorCount - 1));
    object.large = rng.bernoulli(0.5);
    // Now and then a twin of the first object, so counting captions ("two red circles") occur.
    if (k > 0 && rng.bernoulli(0.2)) {
      object.shape = objects.front().shape;
      object.color = objects.front().color;
    }
    object.extent = object.large ? size * 5 / 16 : size * 3 / 16;
    bool placed = false;
    for (int attempt = 0; attempt < 100 && !placed; ++attempt) {
      object.x0 = static_cast<int>(rng.uniform_int(1, size - 1 - object.extent));
      object.y0 = static_cast<int>(rng.uniform_int(1, size - 1 - object.extent));
      placed = std::none_of(objects.begin(), objects.end(), [&](const Object& other) {
        return object.x0 < other.x0 + other.extent + kMargin &&
               other.x0 < object.x0 + object.extent + kMargin &&
               object.y0 < other.y0 + other.extent + kMargin &&
               other.y0 < object.y0 + object.extent + kMargin;
      });
    }
    if (!placed) break;  // the image is full: fewer objects than drawn
    objects.push_back(object);
  }
  return objects;
}

// Gray textured background (a bilinear blend of a coarse random grid), the objects, then
// per-pixel noise over everything. Integer arithmetic only, so every platform draws the same.
cv::Mat draw_scene(const ShapesWorldOptions& options, const std::vector<Object>& objects, Rng& rng) {
  const int size = options.image_size;
  constexpr int kGrid = 4;
  int grid[kGrid + 1][kGrid + 1];
  for (auto& row : grid) {
    for (int& value : row) value = static_cast<int>(rng.uniform_int(-20, 20));
  }
  const int base = static_cast<int>(rng.uniform_int(80, 140));
  int tint[3];
  for (int& value : tint) value = static_cast<int>(rng.uniform_int(-8, 8));
  cv::Mat image(size, size, CV_8UC3);
  for (int y = 0; y < size; ++y) {
    const int gy = y * kGrid / size;
    const int fy = y * kGrid % size;
    for (int x = 0; x < size; ++x) {
      const int gx = x * kGrid / size;
      const int fx = x * kGrid % size;
      const int texture = (grid[gy][gx] * (size - fx) * (size - fy) + grid[gy][gx + 1] * fx * (size - fy) +
                           grid[gy + 1][gx] * (size - fx) * fy + grid[gy + 1][gx + 1] * fx * fy) /
                          (size * size);
      auto* pixel = image.ptr<uint8_t>(y) + 3 * x;
      for (int c = 0; c < 3; ++c)
        pixel[c] = static_cast<uint8_t>(std::clamp(base + tint[c] + texture, 0, 255));
    }
  }
  for (const Object& object : objects) {
    const uint8_t* rgb = kColorValues[object.color];
    const cv::Scalar color(rgb[0], rgb[1], rgb[2]);
    const int e = object.extent;
    const int x0 = object.x0;
    const int y0 = object.y0;
    const int x1 = x0 + e - 1;
    const int y1 = y0 + e - 1;
    std::vector<cv::Point> points;
    switch (object.shape) {
      case 0:
        cv::circle(image, {object.cx(), object.cy()}, (e - 1) / 2, color, cv::FILLED, cv::LINE_8);
        break;
      case 1:
        cv::rectangle(image, cv::Point(x0, y0), cv::Point(x1, y1), color, cv::FILLED, cv::LINE_8);
        break;
      case 2:
        points = {{object.cx(), y0}, {x1, y1}, {x0, y1}};
        break;
      case 3:
        points = {{object.cx(), y0}, {x1, object.cy()}, {object.cx(), y1}, {x0, object.cy()}};
        break;
      default: {
        const float radius = static_cast<float>(e - 1) / 2.0f;
        for (const auto& vertex : kStar) {
          points.emplace_back(
              object.cx() + static_cast<int>(std::lround(vertex[0] * radius)),
              object.cy() + static_cast<int>(std::lround(vertex[1] * radius)));
        }
      }
    }
    if (!points.empty()) cv::fillPoly(image, std::vector<std::vector<cv::Point>>{points}, color, cv::LINE_8);
  }
  if (options.noise > 0) {
    for (int y = 0; y < size; ++y) {
      auto* row = image.ptr<uint8_t>(y);
      for (int i = 0; i < 3 * size; ++i) {
        row[i] = static_cast<uint8_t>(
            std::clamp(row[i] + static_cast<int>(rng.uniform_int(-options.noise, options.noise)), 0, 255));
      }
    }
  }
  return image;
}

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

// A caption of the complete style (ShapesWorldOptions::captions): every object in random order;
// one object: "[there is] a [single] X <region>"; two: "[there is] a X <relation> a Y"; three:
// "a X <relation> a Y and a Z <region>".
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

// One caption drawn from the varied grammar.
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

// "A red circle , a blue square and ..." -> "A red circle, a blue square and ....".
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

std::string split_of(const ShapesWorldOptions& options, int64_t imgid) {
  if (imgid < options.train_images) return "train";
  if (imgid < options.train_images + options.val_images) return "val";
  return "test";
}

std::string image_filename(int64_t imgid) {
  char name[32];
  std::snprintf(name, sizeof(name), "%06lld.png", static_cast<long long>(imgid));
  return name;
}

Json manifest_json(const ShapesWorldOptions& options) {
  return Json::object(
      {{"format", "saccade-shapes-world"},
       {"generator", kGeneratorVersion},
       {"options", Json::object(
                       {{"seed", std::to_string(options.seed)},
                        {"image_size", options.image_size},
                        {"train_images", options.train_images},
                        {"val_images", options.val_images},
                        {"test_images", options.test_images},
                        {"min_objects", options.min_objects},
                        {"max_objects", options.max_objects},
                        {"captions_per_image", options.captions_per_image},
                        {"noise", options.noise},
                        {"captions", options.captions}})}});
}

Json box_json(const Box& box) {
  return Json::array(
      {static_cast<int64_t>(box.x0), static_cast<int64_t>(box.y0), static_cast<int64_t>(box.x1),
       static_cast<int64_t>(box.y1)});
}

// An exclusive flock(2) on a folder, held for the object's lifetime.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::filesystem::path& folder)
      : fd_(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0) {
      if (fd_ >= 0) ::close(fd_);
      throw std::runtime_error("Could not lock " + folder.string());
    }
  }
  ~DirectoryLock() { ::close(fd_); }  // closing releases the lock
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_;
};

}  // namespace

ShapesWorldOptions shapes_world_options_from(const Config& config) {
  ShapesWorldOptions options;
  options.seed = static_cast<uint64_t>(config.get<int64_t>("dataset.shapes.seed"));
  options.image_size = config.get<int>("dataset.shapes.image_size");
  options.train_images = config.get<int>("dataset.shapes.train_images");
  options.val_images = config.get<int>("dataset.shapes.val_images");
  options.test_images = config.get<int>("dataset.shapes.test_images");
  options.min_objects = config.get<int>("dataset.shapes.min_objects");
  options.max_objects = config.get<int>("dataset.shapes.max_objects");
  options.captions_per_image = config.get<int>("dataset.shapes.captions_per_image");
  options.noise = config.get<int>("dataset.shapes.noise");
  options.captions = config.get<std::string>("dataset.shapes.captions");
  return options;
}

void validate(const ShapesWorldOptions& options) {
  auto check = [](bool ok, const std::string& rule, int value) {
    if (!ok) throw std::invalid_argument("dataset.shapes." + rule + ", got " + std::to_string(value));
  };
  check(
      options.image_size >= 32 && options.image_size <= 1024, "image_size must be in [32, 1024] pixels",
      options.image_size);
  check(options.train_images >= 1, "train_images must be >= 1", options.train_images);
  check(options.val_images >= 1, "val_images must be >= 1", options.val_images);
  check(options.test_images >= 1, "test_images must be >= 1", options.test_images);
  check(options.min_objects >= 1, "min_objects must be >= 1", options.min_objects);
  check(
      options.max_objects >= options.min_objects && options.max_objects <= 6,
      "max_objects must be in [min_objects, 6]", options.max_objects);
  check(
      options.captions_per_image >= 1 && options.captions_per_image <= 8,
      "captions_per_image must be in [1, 8]", options.captions_per_image);
  check(options.noise >= 0 && options.noise <= 64, "noise must be in [0, 64] gray levels", options.noise);
  if (options.captions != "varied" && options.captions != "complete") {
    throw std::invalid_argument(
        "dataset.shapes.captions must be varied or complete, got '" + options.captions + "'");
  }
  check(
      options.captions != "complete" || options.max_objects <= kMaxCompleteObjects,
      "max_objects must be <= " + std::to_string(kMaxCompleteObjects) +
          " with captions complete (its captions name every object)",
      options.max_objects);
}

const ShapesImageTruth* ShapesTruth::find(const std::string& image_id) const {
  for (const auto& image : images) {
    if (image.image_id == image_id) return &image;
  }
  return nullptr;
}

ShapesScene generate_shapes_scene(const ShapesWorldOptions& options, int64_t imgid) {
  Rng rng(mix_seed({options.seed, static_cast<uint64_t>(imgid)}));
  const std::vector<Object> objects = place_objects(options, rng);
  const cv::Mat image = draw_scene(options, objects, rng);

  ShapesScene scene;
  scene.image = torch::empty({options.image_size, options.image_size, 3}, torch::kUInt8);
  std::memcpy(scene.image.data_ptr<uint8_t>(), image.data, image.total() * 3);
  ShapesImageTruth& truth = scene.truth;
  truth.image_id = std::to_string(imgid);
  truth.filename = "images/" + image_filename(imgid);
  truth.split = split_of(options, imgid);
  for (const Object& object : objects) {
    const float x0 = static_cast<float>(object.x0);
    const float y0 = static_cast<float>(object.y0);
    const float e = static_cast<float>(object.extent);
    truth.objects.push_back(
        {kShapeNames[object.shape], kColorNames[object.color], object.large ? "large" : "small",
         Box{x0, y0, x0 + e, y0 + e}});
  }
  // Distinct captions; the grammar offers far more than 8 for any scene, the attempt cap only
  // guards against a bug looping forever.
  for (int attempt = 0;
       attempt < 1000 && static_cast<int>(truth.captions.size()) < options.captions_per_image; ++attempt) {
    const Phrase phrase = options.captions == "complete" ? complete_caption(objects, options.image_size, rng)
                                                         : sample_caption(objects, options.image_size, rng);
    ShapesCaptionTruth caption = caption_truth(phrase);
    const bool seen = std::any_of(
        truth.captions.begin(), truth.captions.end(),
        [&](const ShapesCaptionTruth& other) { return other.words == caption.words; });
    if (seen) continue;
    scene.raw_captions.push_back(raw_text(phrase));
    TORCH_CHECK(
        tokenize(scene.raw_captions.back()) == caption.words, "shapes grammar: raw text and tokens disagree");
    truth.captions.push_back(std::move(caption));
  }
  TORCH_CHECK(
      static_cast<int>(truth.captions.size()) == options.captions_per_image,
      "shapes grammar: too few distinct captions for image ", imgid);
  return scene;
}

void write_shapes_world(const ShapesWorldOptions& options, const std::filesystem::path& root) {
  validate(options);
  std::filesystem::create_directories(root / "images");
  const int64_t total = static_cast<int64_t>(options.train_images) + options.val_images + options.test_images;
  std::vector<ShapesImageTruth> truths(static_cast<size_t>(total));
  std::vector<std::vector<std::string>> raws(static_cast<size_t>(total));
  log::info() << "Generating the shapes world (" << options.train_images << " train, " << options.val_images
              << " val, " << options.test_images << " test images of " << options.image_size << " px, seed "
              << options.seed << ") in " << root.string();
  parallel_for(total, 0, [&](int64_t imgid) {
    ShapesScene scene = generate_shapes_scene(options, imgid);
    write_image_file(root / scene.truth.filename, scene.image);
    truths[static_cast<size_t>(imgid)] = std::move(scene.truth);
    raws[static_cast<size_t>(imgid)] = std::move(scene.raw_captions);
  });

  Json::Array karpathy_images;
  Json::Array truth_images;
  for (int64_t imgid = 0; imgid < total; ++imgid) {
    const ShapesImageTruth& truth = truths[static_cast<size_t>(imgid)];
    Json::Array sentences;
    Json::Array sentids;
    Json::Array captions;
    for (size_t k = 0; k < truth.captions.size(); ++k) {
      const int64_t sentid = imgid * options.captions_per_image + static_cast<int64_t>(k);
      const Json::Array tokens(truth.captions[k].words.begin(), truth.captions[k].words.end());
      sentences.push_back(Json::object(
          {{"tokens", tokens},
           {"raw", raws[static_cast<size_t>(imgid)][k]},
           {"imgid", imgid},
           {"sentid", sentid}}));
      sentids.emplace_back(sentid);
      Json::Array objects;
      for (const auto& refs : truth.captions[k].objects)
        objects.push_back(Json::array(Json::Array(refs.begin(), refs.end())));
      captions.push_back(Json::object({{"tokens", tokens}, {"objects", std::move(objects)}}));
    }
    karpathy_images.push_back(Json::object(
        {{"filepath", "images"},
         {"filename", image_filename(imgid)},
         {"imgid", imgid},
         {"split", truth.split},
         {"sentids", std::move(sentids)},
         {"sentences", std::move(sentences)}}));
    Json::Array objects;
    for (const auto& object : truth.objects) {
      objects.push_back(Json::object(
          {{"shape", object.shape},
           {"color", object.color},
           {"size", object.size},
           {"box", box_json(object.box)}}));
    }
    truth_images.push_back(Json::object(
        {{"imgid", imgid},
         {"filename", truth.filename},
         {"split", truth.split},
         {"objects", std::move(objects)},
         {"captions", std::move(captions)}}));
  }
  write_json_file(
      root / kShapesSplitFile, Json::object({{"dataset", "shapes"}, {"images", std::move(karpathy_images)}}));
  write_json_file(
      root / kShapesTruthFile, Json::object(
                                   {{"format", "saccade-shapes-truth"},
                                    {"version", 1},
                                    {"image_size", options.image_size},
                                    {"images", std::move(truth_images)}}));
  write_json_file(root / kShapesManifestFile, manifest_json(options), 2);
}

namespace {

// What `root` holds besides the world's own files and the image cache saccade keeps beside them
// by default (dataset.cache_dir): what regenerating the world would delete.
std::vector<std::string> foreign_entries(const std::filesystem::path& root) {
  const std::set<std::string> ours = {
      "images", "cache", kShapesSplitFile, kShapesTruthFile, kShapesManifestFile};
  std::vector<std::string> foreign;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    const std::string name = entry.path().filename().string();
    if (ours.count(name) == 0) foreign.push_back(name);
  }
  std::sort(foreign.begin(), foreign.end());
  return foreign;
}

}  // namespace

bool ensure_shapes_world(const ShapesWorldOptions& options, const std::filesystem::path& root) {
  // Runs started together (a sweep, parallel tests) share the folder: one generates while the
  // others wait on a lock of the parent folder, then find the world complete.
  const std::filesystem::path parent = root.has_parent_path() ? root.parent_path() : ".";
  std::filesystem::create_directories(parent);
  const DirectoryLock lock(parent);
  const Json expected = manifest_json(options);
  const bool ours = std::filesystem::exists(root / kShapesManifestFile);
  if (ours) {
    try {
      if (read_json_file(root / kShapesManifestFile) == expected) return false;
    } catch (const std::exception&) {
      // An unreadable manifest: regenerate below.
    }
    const std::vector<std::string> foreign = foreign_entries(root);
    if (!foreign.empty()) {
      throw std::invalid_argument(
          root.string() +
          " holds a shapes world made with other options and entries the generator did not write: " +
          count_with_examples(foreign) +
          "; regenerating the world would delete them: move them, or set dataset.root to another folder");
    }
    log::warn() << root.string()
                << " holds a shapes world made with other options or generator; regenerating it";
  } else if (std::filesystem::exists(root) && !std::filesystem::is_empty(root)) {
    throw std::invalid_argument(
        root.string() + " is not empty and holds no shapes world (" + kShapesManifestFile +
        "); set dataset.root to an empty or new folder");
  }
  remove_stale_temporaries(root);
  const std::filesystem::path temporary = temporary_for(root);
  remove_tree(temporary);
  try {
    write_shapes_world(options, temporary);
    remove_tree(root);
    std::filesystem::rename(temporary, root);
  } catch (...) {
    std::error_code ignored;
    remove_tree(temporary, ignored);
    throw;
  }
  return true;
}

ShapesTruth load_shapes_truth(const std::filesystem::path& path) {
  const Json document = read_json_file(path);
  ShapesTruth truth;
  std::string where = "top level";
  try {
    if (document.at("format").as_string() != "saccade-shapes-truth" ||
        document.at("version").as_int64() != 1) {
      throw std::invalid_argument("not a version 1 shapes truth file");
    }
    truth.image_size = static_cast<int>(document.at("image_size").as_int64());
    const Json::Array& images = document.at("images").as_array();
    for (size_t i = 0; i < images.size(); ++i) {
      where = "images[" + std::to_string(i) + "]";
      const Json& image = images[i];
      ShapesImageTruth entry;
      entry.image_id = std::to_string(image.at("imgid").as_int64());
      entry.filename = image.at("filename").as_string();
      entry.split = image.at("split").as_string();
      for (const Json& object : image.at("objects").as_array()) {
        const Json& box = object.at("box");
        if (box.size() != 4) throw std::invalid_argument("a box needs 4 numbers");
        entry.objects.push_back(
            {object.at("shape").as_string(), object.at("color").as_string(), object.at("size").as_string(),
             Box{static_cast<float>(box.at(0).as_double()), static_cast<float>(box.at(1).as_double()),
                 static_cast<float>(box.at(2).as_double()), static_cast<float>(box.at(3).as_double())}});
      }
      for (const Json& caption : image.at("captions").as_array()) {
        ShapesCaptionTruth item;
        for (const Json& token : caption.at("tokens").as_array()) item.words.push_back(token.as_string());
        for (const Json& refs : caption.at("objects").as_array()) {
          std::vector<int> objects;
          for (const Json& ref : refs.as_array()) {
            const int64_t k = ref.as_int64();
            if (k < 0 || k >= static_cast<int64_t>(entry.objects.size())) {
              throw std::invalid_argument("object index " + std::to_string(k) + " out of range");
            }
            objects.push_back(static_cast<int>(k));
          }
          item.objects.push_back(std::move(objects));
        }
        if (item.objects.size() != item.words.size())
          throw std::invalid_argument("\"objects\" and \"tokens\" differ in length");
        entry.captions.push_back(std::move(item));
      }
      truth.images.push_back(std::move(entry));
    }
  } catch (const std::invalid_argument& error) {
    throw std::invalid_argument(path.string() + ": " + where + ": " + error.what());
  }
  return truth;
}

}  // namespace saccade
