// Fixture images and caption files for the data tests.
#include "data_fixtures.h"

#include <torch/torch.h>

#include <stdexcept>

#include "data/image_pipeline.h"
#include "test_util.h"

namespace saccade::testing {

torch::Tensor pattern_image(int height, int width) {
  torch::Tensor image = torch::empty({height, width, 3}, torch::kUInt8);
  auto pixels = image.accessor<uint8_t, 3>();
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      pixels[y][x][0] = static_cast<uint8_t>((10 * y + x) % 256);
      pixels[y][x][1] = static_cast<uint8_t>((100 + x) % 256);
      pixels[y][x][2] = static_cast<uint8_t>((200 - y + 256) % 256);
    }
  }
  return image;
}

void write_image(const std::filesystem::path& path, const torch::Tensor& rgb) {
  std::filesystem::create_directories(path.parent_path());
  write_image_file(path, rgb);
}

std::filesystem::path write_coco_karpathy_fixture(const std::filesystem::path& root) {
  write_image(root / "train2014" / "COCO_train2014_000000000009.jpg", pattern_image(12, 16));
  write_image(root / "train2014" / "COCO_train2014_000000000025.jpg", pattern_image(16, 12));
  write_image(root / "val2014" / "COCO_val2014_000000000042.jpg", pattern_image(10, 10));
  write_image(root / "val2014" / "COCO_val2014_000000000073.jpg", pattern_image(8, 14));
  const auto split_file = root / "dataset_coco.json";
  write_file(split_file, R"({"images": [
  {"filepath": "train2014", "sentids": [0, 1], "filename": "COCO_train2014_000000000009.jpg", "imgid": 0,
   "split": "train", "sentences": [
     {"tokens": ["a", "dog", "on", "grass"], "raw": "A dog on grass.", "imgid": 0, "sentid": 0},
     {"tokens": ["dog", "running"], "raw": "Dog running!", "imgid": 0, "sentid": 1}], "cocoid": 9},
  {"filepath": "val2014", "sentids": [2, 3, 4, 5, 6, 7], "filename": "COCO_val2014_000000000042.jpg", "imgid": 1,
   "split": "restval", "sentences": [
     {"tokens": ["one"], "raw": "One", "imgid": 1, "sentid": 2},
     {"tokens": ["two", "words"], "raw": "Two words", "imgid": 1, "sentid": 3},
     {"tokens": ["three"], "raw": "Three", "imgid": 1, "sentid": 4},
     {"tokens": ["four"], "raw": "Four", "imgid": 1, "sentid": 5},
     {"tokens": ["five"], "raw": "Five", "imgid": 1, "sentid": 6},
     {"tokens": ["six", "captions"], "raw": "Six captions", "imgid": 1, "sentid": 7}], "cocoid": 42},
  {"filepath": "val2014", "sentids": [8], "filename": "COCO_val2014_000000000073.jpg", "imgid": 2,
   "split": "val", "sentences": [{"raw": "A Man's T-shirt, RED.", "imgid": 2, "sentid": 8}], "cocoid": 73},
  {"filepath": "train2014", "sentids": [9], "filename": "COCO_train2014_000000000025.jpg", "imgid": 3,
   "split": "test", "sentences": [{"tokens": ["a", "giraffe"], "raw": "A giraffe.", "imgid": 3, "sentid": 9}],
   "cocoid": 25}
], "dataset": "coco"})");
  return split_file;
}

}  // namespace saccade::testing
