// The shapes world: determinism, ground truth that agrees with the pixels and the captions,
// files readable by the Karpathy reader, and the ensure/regenerate rules.
#include "data/shapes_world.h"

#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "data/caption_corpus.h"
#include "data/image_pipeline.h"
#include "data/vocabulary.h"
#include "test_util.h"

namespace saccade::testing {
namespace {

ShapesWorldOptions tiny_world() {
  ShapesWorldOptions options;
  options.train_images = 12;
  options.val_images = 4;
  options.test_images = 4;
  return options;
}

// Every file under `root`, by relative path, with its bytes.
std::map<std::string, std::string> snapshot(const std::filesystem::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (entry.is_regular_file())
      files[std::filesystem::relative(entry.path(), root).string()] = read_file(entry.path());
  }
  return files;
}

const std::set<std::string> kColors = {"red", "green", "blue", "yellow", "purple", "orange"};
const std::set<std::string> kShapes = {"circle", "square", "triangle", "diamond", "star"};

TEST(ShapesWorld, SameSeedGivesByteIdenticalFilesAndOtherSeedsDiffer) {
  TempDir dir;
  write_shapes_world(tiny_world(), dir / "a");
  write_shapes_world(tiny_world(), dir / "b");
  const auto a = snapshot(dir / "a");
  EXPECT_EQ(a.size(), 20u + 3u);  // 20 PNGs + split file + truth + manifest
  EXPECT_EQ(a, snapshot(dir / "b"));
  ShapesWorldOptions other = tiny_world();
  other.seed = 1;
  write_shapes_world(other, dir / "c");
  EXPECT_NE(snapshot(dir / "c").at("images/000000.png"), a.at("images/000000.png"));
}

TEST(ShapesWorld, ScenesAreDeterministicPerImageAndSizedByOptions) {
  const ShapesWorldOptions options = tiny_world();
  const ShapesScene first = generate_shapes_scene(options, 3);
  const ShapesScene again = generate_shapes_scene(options, 3);
  EXPECT_TRUE(torch::equal(first.image, again.image));
  EXPECT_EQ(first.raw_captions, again.raw_captions);
  EXPECT_EQ(first.image.sizes(), (std::vector<int64_t>{64, 64, 3}));
  EXPECT_EQ(first.truth.split, "train");
  EXPECT_EQ(generate_shapes_scene(options, 12).truth.split, "val");
  EXPECT_EQ(generate_shapes_scene(options, 16).truth.split, "test");
  EXPECT_EQ(first.truth.filename, "images/000003.png");
  EXPECT_EQ(first.truth.image_id, "3");
}

// Checks 60 scenes of a world with these options: boxes, pixel colours, per-word truth, relations;
// counts the relations checked.
void check_truth_agrees_with_pixels_captions_and_relations(
    const ShapesWorldOptions& options, int& relations_checked) {
  for (int64_t imgid = 0; imgid < 60; ++imgid) {
    const ShapesScene scene = generate_shapes_scene(options, imgid);
    const auto& objects = scene.truth.objects;
    ASSERT_GE(objects.size(), 1u);
    ASSERT_LE(objects.size(), 3u);
    for (size_t i = 0; i < objects.size(); ++i) {
      const Box& box = objects[i].box;
      EXPECT_GE(box.x0, 0);
      EXPECT_LE(box.x1, 64);
      EXPECT_EQ(box.x1 - box.x0, box.y1 - box.y0);
      for (size_t j = 0; j < i; ++j) {  // boxes never overlap
        const Box& other = objects[j].box;
        EXPECT_TRUE(box.x1 <= other.x0 || other.x1 <= box.x0 || box.y1 <= other.y0 || other.y1 <= box.y0);
      }
      EXPECT_TRUE(kColors.count(objects[i].color));
      EXPECT_TRUE(kShapes.count(objects[i].shape));
      // Every shape covers its box center with its own color (red is (220, 40, 40), ...).
      const auto center = scene.image[static_cast<int64_t>((box.y0 + box.y1) / 2)]
                                     [static_cast<int64_t>((box.x0 + box.x1) / 2)];
      const int r = center[0].item<int>();
      const int g = center[1].item<int>();
      const int b = center[2].item<int>();
      if (objects[i].color == "red") {
        EXPECT_TRUE(r == 220 && g == 40 && b == 40);
      }
      if (objects[i].color == "blue") {
        EXPECT_TRUE(r == 40 && g == 90 && b == 230);
      }
    }
    ASSERT_EQ(scene.truth.captions.size(), 5u);
    std::set<std::vector<std::string>> distinct;
    for (size_t k = 0; k < scene.truth.captions.size(); ++k) {
      const ShapesCaptionTruth& caption = scene.truth.captions[k];
      distinct.insert(caption.words);
      EXPECT_EQ(tokenize(scene.raw_captions[k]), caption.words);
      ASSERT_EQ(caption.objects.size(), caption.words.size());
      for (size_t w = 0; w < caption.words.size(); ++w) {
        const std::string& word = caption.words[w];
        std::string singular = word;
        if (singular.size() > 1 && singular.back() == 's' &&
            kShapes.count(singular.substr(0, singular.size() - 1))) {
          singular.pop_back();
        }
        const bool content = kColors.count(word) || kShapes.count(singular) || word == "small" ||
                             word == "large" || word == "big";
        EXPECT_EQ(!caption.objects[w].empty(), content) << scene.raw_captions[k] << " word " << word;
        for (const int k_object : caption.objects[w]) {
          const ShapeObject& object = objects[static_cast<size_t>(k_object)];
          if (kColors.count(word)) {
            EXPECT_EQ(object.color, word) << scene.raw_captions[k];
          }
          if (kShapes.count(singular)) {
            EXPECT_EQ(object.shape, singular) << scene.raw_captions[k];
          }
          if (word == "small") {
            EXPECT_EQ(object.size, "small");
          }
          if (word == "large" || word == "big") {
            EXPECT_EQ(object.size, "large");
          }
        }
      }
      // "X to the left of Y": X's box ends before Y's starts (and likewise for the others).
      const auto& words = caption.words;
      for (size_t w = 0; w + 1 < words.size(); ++w) {
        const bool left = words[w] == "left" && words[w + 1] == "of";
        const bool right = words[w] == "right" && words[w + 1] == "of";
        const bool above = words[w] == "above";
        const bool below = words[w] == "below";
        if (!left && !right && !above && !below) continue;
        int subject = -1;  // the last shape before the relation
        int object = -1;   // the first shape after it
        for (size_t v = 0; v < words.size(); ++v) {
          if (caption.objects[v].size() != 1 || !kShapes.count(words[v])) continue;
          if (v < w) {
            subject = caption.objects[v][0];
          } else if (object < 0) {
            object = caption.objects[v][0];
          }
        }
        EXPECT_GE(subject, 0);
        EXPECT_GE(object, 0);
        if (subject < 0 || object < 0) continue;
        const Box& a = objects[static_cast<size_t>(subject)].box;
        const Box& b = objects[static_cast<size_t>(object)].box;
        if (left) {
          EXPECT_LE(a.x1, b.x0) << scene.raw_captions[k];
        }
        if (right) {
          EXPECT_LE(b.x1, a.x0) << scene.raw_captions[k];
        }
        if (above) {
          EXPECT_LE(a.y1, b.y0) << scene.raw_captions[k];
        }
        if (below) {
          EXPECT_LE(b.y1, a.y0) << scene.raw_captions[k];
        }
        ++relations_checked;
      }
    }
    EXPECT_EQ(distinct.size(), 5u);
  }
}

TEST(ShapesWorld, TruthAgreesWithPixelsCaptionsAndRelations) {
  ShapesWorldOptions options = tiny_world();
  options.noise = 0;  // exact colors at object centers
  int varied_relations = 0, complete_relations = 0;
  check_truth_agrees_with_pixels_captions_and_relations(options, varied_relations);
  EXPECT_GT(varied_relations, 10);
  options.captions = "complete";
  check_truth_agrees_with_pixels_captions_and_relations(options, complete_relations);
  EXPECT_GT(complete_relations, 100);
}

TEST(ShapesWorld, CompleteCaptionsNameEveryObjectAndATrueRelation) {
  ShapesWorldOptions options = tiny_world();
  options.captions = "complete";
  options.captions_per_image = 8;  // the most a lone small object allows: 8 distinct wordings
  for (int64_t imgid = 0; imgid < 100; ++imgid) {
    const ShapesScene scene = generate_shapes_scene(options, imgid);
    const size_t n = scene.truth.objects.size();
    ASSERT_EQ(scene.truth.captions.size(), 8u);
    for (size_t k = 0; k < scene.truth.captions.size(); ++k) {
      const ShapesCaptionTruth& caption = scene.truth.captions[k];
      EXPECT_LE(caption.words.size(), 21u) << scene.raw_captions[k];
      // Each object once by its colour word and once by its shape word.
      for (size_t object = 0; object < n; ++object) {
        int colour_words = 0, shape_words = 0;
        for (size_t w = 0; w < caption.words.size(); ++w) {
          if (caption.objects[w] != std::vector<int>{static_cast<int>(object)}) continue;
          colour_words += kColors.count(caption.words[w]) > 0;
          shape_words += kShapes.count(caption.words[w]) > 0;
        }
        EXPECT_EQ(colour_words, 1) << scene.raw_captions[k] << " object " << object;
        EXPECT_EQ(shape_words, 1) << scene.raw_captions[k] << " object " << object;
      }
      // Two or three objects: a relation; one or three: a region ("top", "middle", ...).
      const auto has = [&](std::initializer_list<const char*> any) {
        return std::any_of(any.begin(), any.end(), [&](const char* word) {
          return std::find(caption.words.begin(), caption.words.end(), word) != caption.words.end();
        });
      };
      EXPECT_EQ(has({"above", "below", "of"}), n >= 2) << scene.raw_captions[k];
      EXPECT_EQ(has({"top", "bottom", "middle"}) || (n != 2 && has({"on"})), n != 2) << scene.raw_captions[k];
    }
  }
}

TEST(ShapesWorld, FilesReadBackThroughTheKarpathyReaderAndTruthLoader) {
  TempDir dir;
  const ShapesWorldOptions options = tiny_world();
  write_shapes_world(options, dir.path());
  const CaptionCorpus corpus = read_karpathy_split(dir / kShapesSplitFile, dir.path());
  EXPECT_EQ(corpus.name, "shapes");
  ASSERT_EQ(corpus.images.size(), 20u);
  const ShapesTruth truth = load_shapes_truth(dir / kShapesTruthFile);
  EXPECT_EQ(truth.image_size, 64);
  ASSERT_EQ(truth.images.size(), 20u);
  for (size_t i = 0; i < corpus.images.size(); ++i) {
    const ImageRecord& record = corpus.images[i];
    const ShapesImageTruth* image = truth.find(record.image_id);
    ASSERT_NE(image, nullptr);
    EXPECT_EQ(record.path, dir / image->filename);
    EXPECT_EQ(record.split, image->split);
    ASSERT_EQ(record.captions.size(), image->captions.size());
    for (size_t k = 0; k < record.captions.size(); ++k)
      EXPECT_EQ(record.captions[k].words, image->captions[k].words);
    // The PNG on disk is the generated image, and the stored truth is the generated truth.
    const ShapesScene scene = generate_shapes_scene(options, static_cast<int64_t>(i));
    EXPECT_TRUE(torch::equal(decode_image(record.path), scene.image));
    ASSERT_EQ(image->objects.size(), scene.truth.objects.size());
    EXPECT_EQ(image->objects[0].box, scene.truth.objects[0].box);
    EXPECT_EQ(image->captions[0].objects, scene.truth.captions[0].objects);
  }
  EXPECT_EQ(truth.find("999"), nullptr);
}

TEST(ShapesWorld, LoadTruthRejectsMalformedFiles) {
  TempDir dir;
  write_file(dir / "t.json", R"({"format": "saccade-shapes-truth", "version": 1, "image_size": 64, "images": [
    {"imgid": 0, "filename": "images/000000.png", "split": "train", "objects": [],
     "captions": [{"tokens": ["a", "circle"], "objects": [[], [0]]}]}]})");
  try {
    load_shapes_truth(dir / "t.json");
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()), (dir / "t.json").string() + ": images[0]: object index 0 out of range");
  }
  write_file(dir / "u.json", R"({"format": "other"})");
  EXPECT_THROW(load_shapes_truth(dir / "u.json"), std::invalid_argument);
  EXPECT_THROW(load_shapes_truth(dir / "missing.json"), std::runtime_error);
}

TEST(ShapesWorld, EnsureGeneratesOnceRegeneratesOnChangeAndRefusesForeignFolders) {
  TempDir dir;
  const auto root = dir / "shapes";
  EXPECT_TRUE(ensure_shapes_world(tiny_world(), root));
  const auto time = std::filesystem::last_write_time(root / kShapesSplitFile);
  EXPECT_FALSE(ensure_shapes_world(tiny_world(), root));
  EXPECT_EQ(std::filesystem::last_write_time(root / kShapesSplitFile), time);

  ShapesWorldOptions bigger = tiny_world();
  bigger.val_images = 6;
  EXPECT_TRUE(ensure_shapes_world(bigger, root));
  EXPECT_EQ(read_karpathy_split(root / kShapesSplitFile, root).images.size(), 22u);
  // Regenerating deletes the world's own files and its image cache, nothing else.
  write_file(root / "cache" / "train.bin", "stale");
  write_file(root / "notes.txt", "mine");
  try {
    ensure_shapes_world(tiny_world(), root);
    ADD_FAILURE() << "a world holding other files was regenerated";
  } catch (const std::invalid_argument& error) {
    EXPECT_EQ(
        std::string(error.what()),
        root.string() +
            " holds a shapes world made with other options and entries the generator did not write: 1 "
            "(e.g. notes.txt); regenerating the world would delete them: move them, or set dataset.root "
            "to another folder");
  }
  EXPECT_EQ(read_file(root / "notes.txt"), "mine");
  std::filesystem::remove(root / "notes.txt");
  EXPECT_TRUE(ensure_shapes_world(tiny_world(), root));
  EXPECT_FALSE(std::filesystem::exists(root / "cache"));

  write_file(dir / "mine" / "thesis.txt", "do not delete");
  EXPECT_THROW(ensure_shapes_world(tiny_world(), dir / "mine"), std::invalid_argument);
  EXPECT_EQ(read_file(dir / "mine" / "thesis.txt"), "do not delete");
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp-"), std::string::npos);  // no temporaries left
  }
}

TEST(ShapesWorld, RunsStartedTogetherGenerateOnce) {
  TempDir dir;
  std::atomic<int> generated{0};
  auto run = [&] { generated += ensure_shapes_world(tiny_world(), dir / "shared") ? 1 : 0; };
  std::thread first(run);
  std::thread second(run);
  first.join();
  second.join();
  EXPECT_EQ(generated.load(), 1);
  EXPECT_EQ(read_karpathy_split(dir / "shared" / kShapesSplitFile, dir / "shared").images.size(), 20u);
}

TEST(ShapesWorld, ValidateNamesTheKey) {
  ShapesWorldOptions options;
  EXPECT_NO_THROW(validate(options));
  options.max_objects = 0;
  try {
    validate(options);
    FAIL() << "no error";
  } catch (const std::invalid_argument& error) {
    EXPECT_STREQ(error.what(), "dataset.shapes.max_objects must be in [min_objects, 6], got 0");
  }
  options = ShapesWorldOptions{};
  options.image_size = 16;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = ShapesWorldOptions{};
  options.train_images = 0;
  EXPECT_THROW(validate(options), std::invalid_argument);
  options = ShapesWorldOptions{};
  options.captions = "other";
  EXPECT_EQ(
      message_of<std::invalid_argument>([&] { validate(options); }),
      "dataset.shapes.captions must be varied or complete, got 'other'");
  options.captions = "complete";
  options.max_objects = 4;
  EXPECT_EQ(
      message_of<std::invalid_argument>([&] { validate(options); }),
      "dataset.shapes.max_objects must be <= 3 with captions complete (its captions name every object), got "
      "4");
  options.captions = "varied";
  EXPECT_NO_THROW(validate(options));
}

}  // namespace
}  // namespace saccade::testing
