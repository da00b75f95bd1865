// Fuzz targets over files: safetensors, the caption corpora, images, vocab.json, the caption
// files `saccade score` reads, a feature cache, a checkpoint's state.json.
#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "data/caption_corpus.h"
#include "data/feature_cache.h"
#include "data/image_pipeline.h"
#include "data/vocabulary.h"
#include "eval/caption_files.h"
#include "fuzz_targets.h"
#include "io/safetensors.h"
#include "io/train_state.h"

namespace saccade::fuzz {

void fuzz_safetensors(std::string_view input) {
  const std::string path = scratch_file(input, "weights.safetensors");
  expect_clean_refusal([&] {
    for (const auto& [name, tensor] : load_safetensors(path)) {
      require(!name.empty(), "a tensor with an empty name");
      require(tensor.defined(), "an undefined tensor " + name);
    }
  });
  expect_clean_refusal([&] { load_safetensors(path, torch::kFloat); });
}

void fuzz_karpathy(std::string_view input) {
  const std::string path = scratch_file(input, "dataset.json");
  expect_clean_refusal([&] {
    for (const auto& image : read_karpathy_split(path, "images").images) {
      require(!image.captions.empty(), "an image without captions: " + image.image_id);
    }
  });
}

void fuzz_coco(std::string_view input) {
  const size_t nul = input.find('\0');
  const std::string captions = scratch_file(input.substr(0, nul), "captions.json");
  const std::string split_list =
      scratch_file(nul == std::string_view::npos ? "" : input.substr(nul + 1), "splits.txt");
  expect_clean_refusal([&] {
    for (const auto& image : read_coco_captions({captions}, {"images"}, split_list).images) {
      require(!image.captions.empty(), "an image without captions: " + image.image_id);
    }
  });
}

void fuzz_image(std::string_view input) {
  const std::string path = scratch_file(input, "image");
  // A bound that keeps one decode within libFuzzer's default memory limit.
  constexpr int64_t kMaxPixels = 4 << 20;
  // OpenCV writes to std::cerr about some files it fails on ("imdecode_('...'): can't read data:
  // OpenCV(4.6.0) ...", or its logger's "[ WARN:...]"): none of that may pass. The C libraries'
  // own messages ("libpng error: ...", libjpeg's "Corrupt JPEG data: ...") go through C's stdio,
  // which a process decoding on several threads cannot silence for one of them: not checked.
  const std::string written = standard_error_of([&] {
    expect_clean_refusal([&] {
      check_image_file(path);
      const torch::Tensor rgb = decode_image(path, kMaxPixels);
      require(rgb.dim() == 3 && rgb.size(2) == 3, "an image decoded to a shape other than [H, W, 3]");
      require(rgb.size(0) * rgb.size(1) <= kMaxPixels, "an image above max_pixels decoded");
    });
  });
  std::istringstream lines(written);
  for (std::string line; std::getline(lines, line);) {
    const bool opencvs = line.find("imdecode_") != std::string::npos ||
                         line.find("OpenCV") != std::string::npos || line.rfind("[ WARN", 0) == 0 ||
                         line.rfind("[ERROR", 0) == 0;
    require(!opencvs, "OpenCV wrote about the image: " + line);
  }
}

void fuzz_vocabulary(std::string_view input) {
  const std::string path = scratch_file(input, "vocab.json");
  expect_clean_refusal([&] {
    const Vocabulary vocabulary = Vocabulary::load(path);
    for (int64_t id = 0; id < vocabulary.size(); ++id) {
      require(
          vocabulary.id(vocabulary.word(id)) == id,
          "word " + std::to_string(id) + " does not map back to its id");
    }
    const std::string saved = scratch_file("", "vocab_saved.json");
    vocabulary.save(saved);
    require(Vocabulary::load(saved) == vocabulary, "a vocabulary does not read back as saved");
  });
}

void fuzz_train_state(std::string_view input) {
  const std::string path = scratch_file(input, "state.json");
  expect_clean_refusal([&] {
    const TrainState state = read_train_state(path);
    const std::string saved = scratch_file("", "state_saved.json");
    write_train_state(saved, state);
    require(read_train_state(saved) == state, "a state.json does not read back as written");
  });
}

void fuzz_caption_files(std::string_view input) {
  const std::string path = scratch_file(input, "captions.json");
  expect_clean_refusal([&] {
    const ReferenceCaptions references = read_reference_captions(path);
    for (const auto& [id, captions] : references.captions)
      require(!captions.empty(), "an image without references: " + id);
    std::vector<std::string> ordered = references.image_order;
    std::sort(ordered.begin(), ordered.end());
    require(
        std::adjacent_find(ordered.begin(), ordered.end()) == ordered.end() &&
            ordered.size() == references.captions.size(),
        "the image order does not list each image once");
  });
  expect_clean_refusal([&] { read_result_captions(path); });
}

void fuzz_feature_cache(std::string_view input) {
  const size_t nul = input.find('\0');
  const std::string manifest = scratch_file(input.substr(0, nul), "features.json");
  scratch_file(nul == std::string_view::npos ? "" : input.substr(nul + 1), "shard-00000.safetensors");
  expect_clean_refusal([&] {
    const FeatureCache cache(std::filesystem::path(manifest).parent_path());
    const auto [height, width] = cache.grid_size();
    for (int64_t row = 0; row < cache.size(); ++row) {
      const torch::Tensor annotations = cache.get(row);
      require(
          annotations.dim() == 2 && annotations.size(0) == height * width &&
              annotations.size(1) == cache.dim(),
          "row " + std::to_string(row) + " is not [H' * W', D]");
      cache.batch({row});
    }
  });
}

}  // namespace saccade::fuzz
