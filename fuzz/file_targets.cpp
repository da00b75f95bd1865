// Fuzz targets over files: safetensors, the caption corpora, images.
#include <string>

#include "data/caption_corpus.h"
#include "data/image_pipeline.h"
#include "fuzz_targets.h"
#include "io/safetensors.h"

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
  expect_clean_refusal([&] {
    check_image_file(path);
    const torch::Tensor rgb = decode_image(path, kMaxPixels);
    require(rgb.dim() == 3 && rgb.size(2) == 3, "an image decoded to a shape other than [H, W, 3]");
    require(rgb.size(0) * rgb.size(1) <= kMaxPixels, "an image above max_pixels decoded");
  });
}

}  // namespace saccade::fuzz
