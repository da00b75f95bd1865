// The shapes world: each image's scene and captions with their truth, and its files on disk.
#include "data/shapes_world.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "base/text.h"
#include "data/parallel.h"
#include "data/rng.h"
#include "data/shapes_grammar.h"
#include "data/shapes_scene.h"
#include "data/vocabulary.h"
#include "io/directory_lock.h"
#include "io/log.h"
#include "io/temporaries.h"

namespace saccade {
namespace {

// Bump when the generator changes what it draws or writes, so old worlds are regenerated.
constexpr int kGeneratorVersion = 1;

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
  const std::vector<shapes_detail::Object> objects = shapes_detail::place_objects(options, rng);
  ShapesScene scene;
  scene.image = shapes_detail::draw_scene_image(options, objects, rng);
  ShapesImageTruth& truth = scene.truth;
  truth.image_id = std::to_string(imgid);
  truth.filename = "images/" + image_filename(imgid);
  truth.split = split_of(options, imgid);
  for (const shapes_detail::Object& object : objects) {
    const float x0 = static_cast<float>(object.x0);
    const float y0 = static_cast<float>(object.y0);
    const float e = static_cast<float>(object.extent);
    truth.objects.push_back(
        {shapes_detail::kShapeNames[object.shape], shapes_detail::kColorNames[object.color],
         object.large ? "large" : "small", Box{x0, y0, x0 + e, y0 + e}});
  }
  // Distinct captions; the grammar offers far more than 8 for any scene, the attempt cap only
  // guards against a bug looping forever.
  for (int attempt = 0;
       attempt < 1000 && static_cast<int>(truth.captions.size()) < options.captions_per_image; ++attempt) {
    const shapes_detail::Phrase phrase =
        options.captions == "complete" ? shapes_detail::complete_caption(objects, options.image_size, rng)
                                       : shapes_detail::sample_caption(objects, options.image_size, rng);
    ShapesCaptionTruth caption = shapes_detail::caption_truth(phrase);
    const bool seen = std::any_of(
        truth.captions.begin(), truth.captions.end(),
        [&](const ShapesCaptionTruth& other) { return other.words == caption.words; });
    if (seen) continue;
    scene.raw_captions.push_back(shapes_detail::raw_text(phrase));
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
