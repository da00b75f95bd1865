// `saccade bench loader`: how fast images reach the model. For the configured dataset's train
// split (default: the shapes world, prepared if needed): decode + resize + crop from the image
// files on 1 thread and on every core, rows read from the memory-mapped cache, and whole loader
// batches (cache, data.workers, normalization, padding). Then the same decode + resize on
// COCO-sized photos (synthetic 640x480 JPEGs, 256 -> 224), since shapes PNGs are tiny.
#include <torch/torch.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/bench/bench.h"
#include "data/image_cache.h"
#include "data/loader.h"
#include "data/parallel.h"
#include "data/prepare.h"
#include "data/shapes_world.h"
#include "io/temporaries.h"

namespace saccade::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMaxImages = 2000;
constexpr int64_t kPhotos = 64;

// Images per second of `body(i)` for i in [0, count) on `threads` threads.
template <typename Body>
double images_per_second(int64_t count, int threads, const Body& body) {
  const auto start = Clock::now();
  parallel_for(count, threads, body);
  return static_cast<double>(count) / std::chrono::duration<double>(Clock::now() - start).count();
}

void print_rate(const std::string& what, double rate) {
  char line[160];
  std::snprintf(line, sizeof(line), "  %-58s %9.0f img/s\n", what.c_str(), rate);
  std::cout << line;
}

// Writes `count` 640x480 JPEGs into `dir` and returns their paths: a 480x480 noisy shapes scene
// widened with part of another, so the files are as large and as busy as photos.
std::vector<std::filesystem::path> write_photos(const std::filesystem::path& dir, int64_t count) {
  std::filesystem::create_directories(dir);
  ShapesWorldOptions world;
  world.image_size = 480;
  world.noise = 24;
  std::vector<std::filesystem::path> paths;
  for (int64_t i = 0; i < count; ++i) {
    const torch::Tensor left = generate_shapes_scene(world, 2 * i).image;  // [480, 480, 3]
    const torch::Tensor right = generate_shapes_scene(world, 2 * i + 1).image.slice(1, 0, 160);
    paths.push_back(dir / ("photo" + std::to_string(i) + ".jpg"));
    write_image_file(paths.back(), torch::cat({left, right}, 1));  // [480, 640, 3]
  }
  return paths;
}

}  // namespace

int bench_loader(const Job& job) {
  const Config& config = job.composition.config;
  const DatasetOptions options = dataset_options_from(config);
  validate(options);
  const PreparedDataset data = ensure_prepared(options, {Split::train});
  const PreparedSplit& train = data.train;
  const int64_t count = std::min<int64_t>(kMaxImages, static_cast<int64_t>(train.images.size()));
  std::vector<std::filesystem::path> paths;
  for (int64_t i = 0; i < count; ++i) paths.push_back(train.images[static_cast<size_t>(i)].path);
  const int cores = resolve_threads(0);
  const ImageOptions& image = options.image;

  std::cout << "loader bench: " << options.name << " train, first " << count << " images, resize "
            << image.resize << " crop " << image.crop << ", " << cores << " cores\n";
  const FileImageSource files(paths, image);
  print_rate(
      "decode+resize from files, 1 thread", images_per_second(count, 1, [&](int64_t i) { files.load(i); }));
  print_rate(
      "decode+resize from files, " + std::to_string(cores) + " threads",
      images_per_second(count, cores, [&](int64_t i) { files.load(i); }));
  if (options.cache) {
    const ImageCache& cache = dynamic_cast<const ImageCache&>(*train.source);
    print_rate("read from the image cache, 1 thread", images_per_second(count, 1, [&](int64_t i) {
                 cache.load(i);
               }));
  }

  LoaderOptions loader_options = loader_options_from(config, Split::train, 32);
  validate(loader_options);
  const Vocabulary vocabulary = build_vocabulary(train.images, options.vocabulary.min_word_count);
  auto dataset = std::make_shared<SubsetDataset>(
      make_caption_dataset(train, vocabulary, options.vocabulary),
      first_indices(count, static_cast<int64_t>(train.images.size())));
  Loader loader(dataset, loader_options, image);
  const auto start = Clock::now();
  int64_t images = 0;
  while (auto batch = loader.next()) images += batch->size();
  print_rate(
      "loader batches (B=32, " + std::string(options.cache ? "cache" : "files") + ", data.workers " +
          std::to_string(loader_options.workers) + ", normalized)",
      static_cast<double>(images) / std::chrono::duration<double>(Clock::now() - start).count());

  const auto photo_dir =
      std::filesystem::temp_directory_path() / ("saccade_bench_photos_" + std::to_string(::getpid()));
  const auto photos = write_photos(photo_dir, kPhotos);
  const FileImageSource photo_files(photos, ImageOptions{});
  std::cout << "COCO-sized photos: " << kPhotos << " synthetic 640x480 JPEGs, resize 256 crop 224\n";
  print_rate("decode+resize from files, 1 thread", images_per_second(kPhotos, 1, [&](int64_t i) {
               photo_files.load(i);
             }));
  print_rate(
      "decode+resize from files, " + std::to_string(cores) + " threads",
      images_per_second(kPhotos, cores, [&](int64_t i) { photo_files.load(i); }));
  remove_tree(photo_dir);
  return 0;
}

}  // namespace saccade::cli
